# METADATA
# title: Machine-regular scraping
# description: >-
#   Page views (not static assets, not API or XHR calls, not verified
#   crawlers) per client address and user agent, counted by the number of
#   distinct pages, that trip only when they arrive at machine-regular
#   intervals: a script that sleeps a fixed time between fetches stays under
#   the volume rules' limits, and people browse in bursts. Distinct pages
#   leave out monitors and pollers that ask for one or a few URLs at regular
#   intervals; the many users of a NAT address each have their user agent,
#   and together they are not regular. A request with a referer is not
#   counted: a sleep loop sends none, while people following links and
#   single-page apps calling their back end do.
# custom:
#   characteristics: [ip.src, http.user_agent]
#   distinct: http.path
#   period: 30m
#   requests_per_period: 20
#   regularity: {min_events: 33, max_cv: 0.18}
#   action: rate_limit
#   mitigation_timeout: 30m
package guardd.rules.regular_scraping

static := {
	".css", ".js", ".mjs", ".map", ".json", ".png", ".jpg", ".jpeg", ".gif", ".webp",
	".avif", ".svg", ".ico", ".woff", ".woff2", ".ttf", ".otf", ".eot", ".mp4", ".webm",
	".mp3", ".m3u8", ".ts", ".txt", ".xml", ".webmanifest", ".wasm",
}

# Prefixes of API, asset, framework and monitoring endpoints: a single-page
# app polls them at a steady rate, a health check calls them like a clock.
api := {
	"/api/", "/graphql", "/_next/", "/static/", "/assets/", "/wp-json/", "/wp-content/",
	"/wp-includes/", "/ajax", "/xhr/", "/rest/", "/socket.io/", "/sockjs", "/cdn-cgi/",
	"/__", "/.well-known/", "/health", "/metrics", "/status", "/ping",
}

subresource := {"empty", "script", "style", "image", "font", "audio", "video", "track", "worker", "sharedworker", "serviceworker", "manifest", "object", "embed", "report", "xslt"}

count if {
	not input.bot.verified
	not input.http.referer
	input.http.method in {"GET", "HEAD"}
	not strings.any_suffix_match(lower(input.http.path), static)
	not strings.any_prefix_match(lower(input.http.path), api)
	not input.http.headers["x-requested-with"]
	not subresource_fetch
}

subresource_fetch if input.http.headers["sec-fetch-dest"] in subresource

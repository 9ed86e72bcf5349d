# METADATA
# title: Scraping spread over one network
# description: >-
#   Many addresses of one /24 (or /64) fetching pages without a session
#   cookie, a referer or any sign of a browser session, whatever their user
#   agents: a scraper rented a block of addresses so that each stays under
#   per-address limits, and rotates browser user agents so that no (network,
#   user agent) pair fills up. Counted as distinct addresses per prefix. A
#   person's first page view is bare too, and then comes with a cookie and a
#   referer: a university or CGNAT /24 sees a few new visitors a minute, not
#   40 bare addresses in five minutes. A person could be among them, so the
#   bare page views of the network are challenged (a browser passes and goes
#   on), not refused. Verified crawlers (AhrefsBot's published ranges
#   included) are not counted.
# custom:
#   characteristics: [ip.src.prefix]
#   distinct: ip.src
#   period: 5m
#   requests_per_period: 40
#   action: challenge
#   mitigation_timeout: 30m
#   algorithm: sliding_window
package guardd.rules.prefix_scraping

static := {
	".css", ".js", ".mjs", ".map", ".json", ".png", ".jpg", ".jpeg", ".gif", ".webp",
	".avif", ".svg", ".ico", ".woff", ".woff2", ".ttf", ".otf", ".eot", ".mp4", ".webm",
	".mp3", ".m3u8", ".ts", ".txt", ".xml", ".webmanifest", ".wasm",
}

api := {"/api/", "/graphql", "/_next/", "/static/", "/assets/", "/wp-json/", "/.well-known/", "/health", "/metrics"}

count if {
	not input.http.referer
	not input.http.cookies.session
	input.http.method in {"GET", "HEAD"}
	not input.bot.verified
	not strings.any_suffix_match(lower(input.http.path), static)
	not strings.any_prefix_match(lower(input.http.path), api)
}

# METADATA
# title: Aggressive crawling
# description: >-
#   Page views (not static assets, not API or XHR calls) without a session
#   cookie, counted per client address and user agent: a person reads pages;
#   a scraper fetches them one after another. Keyed on address and user agent
#   so that the many users of one NAT or CGNAT address are counted apart;
#   page views with a session cookie are counted per session by
#   aggressive_crawl_session. Verified crawlers are not counted.
# custom:
#   characteristics: [ip.src, http.user_agent]
#   windows:
#     - period: 5m
#       requests_per_period: 300
#     - period: 1h
#       requests_per_period: 2400
#   action: rate_limit
#   mitigation_timeout: 10m
#   algorithm: sliding_window
package guardd.rules.aggressive_crawl

static := {
	".css", ".js", ".mjs", ".map", ".json", ".png", ".jpg", ".jpeg", ".gif", ".webp",
	".avif", ".svg", ".ico", ".woff", ".woff2", ".ttf", ".otf", ".eot", ".mp4", ".webm",
	".mp3", ".m3u8", ".ts", ".txt", ".xml", ".webmanifest", ".wasm",
}

# Prefixes of API, asset and framework endpoints that single-page apps call
# many times per page view.
api := {
	"/api/", "/graphql", "/_next/", "/static/", "/assets/", "/wp-json/", "/wp-content/",
	"/wp-includes/", "/ajax", "/xhr/", "/rest/", "/socket.io/", "/sockjs", "/cdn-cgi/",
	"/__", "/.well-known/", "/health", "/metrics",
}

# Sec-Fetch-Dest values of sub-resources and fetch() calls; a page view is
# "document" (or the header is absent, as in logs and older clients).
subresource := {"empty", "script", "style", "image", "font", "audio", "video", "track", "worker", "sharedworker", "serviceworker", "manifest", "object", "embed", "report", "xslt"}

count if {
	not input.bot.verified
	not input.http.cookies.session
	page_view
}

page_view if {
	input.http.method in {"GET", "HEAD"}
	not strings.any_suffix_match(lower(input.http.path), static)
	not strings.any_prefix_match(lower(input.http.path), api)
	not input.http.headers["x-requested-with"]
	not subresource_fetch
}

# A helper, not `not input.http.headers["sec-fetch-dest"] in subresource`:
# Rego evaluates the header reference of a negated call outside the `not`,
# so that form fails, rather than holds, when the header is absent.
subresource_fetch if input.http.headers["sec-fetch-dest"] in subresource

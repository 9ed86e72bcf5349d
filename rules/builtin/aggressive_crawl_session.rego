# METADATA
# title: Aggressive crawling within one session
# description: >-
#   Page views (not static assets, not API or XHR calls) counted per session
#   cookie: one user, whatever address it shares. The companion of
#   aggressive_crawl for clients that keep their cookie. Adapt the cookie
#   name to your site, as for credential_stuffing_cookie.
# custom:
#   characteristics: ['http.cookies["session"]']
#   windows:
#     - period: 5m
#       requests_per_period: 300
#     - period: 1h
#       requests_per_period: 2400
#   action: rate_limit
#   mitigation_timeout: 10m
#   algorithm: sliding_window
package guardd.rules.aggressive_crawl_session

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
	input.http.cookies.session
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

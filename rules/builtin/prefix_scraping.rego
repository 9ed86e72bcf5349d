# METADATA
# title: Scraping spread over one network
# description: >-
#   Many addresses of one /24 (or /64) fetching pages with the same user
#   agent, each without a session cookie, a referer or any sign of a browser
#   session: a scraper rented a block of addresses so that each stays under
#   per-address limits. Counted as distinct addresses per (prefix, user
#   agent); the users of a residential block or a CGNAT pool have their own
#   user agents, cookies and referers, and are not counted after their first
#   page. The limit is above the size of a CGNAT pool's share of a /24 (its
#   phones' first pages are bare, and many share one user agent); a scraper
#   rotating user agents over the block is prefix_campaign's.
# custom:
#   characteristics: [ip.src.prefix, http.user_agent]
#   distinct: ip.src
#   period: 10m
#   requests_per_period: 32
#   action: rate_limit
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
	not input.bot.verified
	not input.http.referer
	not input.http.cookies.session
	input.http.method in {"GET", "HEAD"}
	not strings.any_suffix_match(lower(input.http.path), static)
	not strings.any_prefix_match(lower(input.http.path), api)
}

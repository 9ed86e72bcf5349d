# METADATA
# title: Bare page views from many addresses of one network
# description: >-
#   Page views without a Referer and without a session cookie, counted as
#   distinct addresses per /24 (or /64), whatever the user agent: a scraper
#   that rents a block of addresses and rotates browser user agents so that
#   no (prefix, user agent) pair of prefix_scraping fills up. A person's first
#   page view is bare too, and then comes with a cookie and a referer; a busy
#   university or CGNAT /24 sees a few new visitors a minute, not 40 bare
#   addresses in five minutes. A person could be among them, so the bare page
#   views of the network are challenged (a browser passes and goes on), not
#   refused. Verified crawlers are not counted.
# custom:
#   characteristics: [ip.src.prefix]
#   distinct: ip.src
#   period: 5m
#   requests_per_period: 40
#   action: challenge
#   mitigation_timeout: 30m
#   algorithm: sliding_window
package guardd.rules.prefix_campaign

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

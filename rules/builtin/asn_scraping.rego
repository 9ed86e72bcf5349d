# METADATA
# title: Scraping from one network (ASN)
# description: >-
#   Page views counted per origin AS number, when a MaxMind ASN database is
#   configured. Catches scrapers that spread over many addresses of one
#   hosting provider. The action is log: a whole network is a blunt scope.
# custom:
#   characteristics: [ip.src.asnum]
#   period: 5m
#   requests_per_period: 3000
#   action: log
#   mitigation_timeout: 30m
#   algorithm: sliding_window
package guardd.rules.asn_scraping

static := {
	".css", ".js", ".mjs", ".map", ".json", ".png", ".jpg", ".jpeg", ".gif", ".webp",
	".avif", ".svg", ".ico", ".woff", ".woff2", ".ttf", ".otf", ".eot", ".mp4", ".webm",
	".mp3", ".m3u8", ".ts", ".txt", ".xml", ".webmanifest", ".wasm",
}

count if {
	input.ip.asnum
	not input.bot.verified
	input.http.method in {"GET", "HEAD"}
	not strings.any_suffix_match(lower(input.http.path), static)
	not startswith(input.http.path, "/api/")
	not input.http.headers["x-requested-with"]
}

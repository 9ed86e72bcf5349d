# METADATA
# title: 404 scanning
# description: >-
#   Requests for pages (not static assets) answered 404, counted per client
#   address: directory brute forcing and vulnerability scanners.
# custom:
#   characteristics: [ip.src]
#   period: 5m
#   requests_per_period: 40
#   action: block
#   mitigation_timeout: 30m
#   algorithm: sliding_window
package guardd.rules.scan_404

# Missing assets are a site bug, not an attack: a page with broken images
# would otherwise trip the rule for every visitor.
static := {
	".css", ".js", ".mjs", ".map", ".png", ".jpg", ".jpeg", ".gif", ".webp", ".avif",
	".svg", ".ico", ".woff", ".woff2", ".ttf", ".otf", ".eot", ".mp4", ".webm", ".mp3",
}

count if {
	input.http.status == 404
	not strings.any_suffix_match(lower(input.http.path), static)
	not lower(input.http.path) in {"/favicon.ico", "/robots.txt", "/apple-touch-icon.png", "/apple-touch-icon-precomposed.png", "/ads.txt", "/sitemap.xml"}
}

mitigate := true

# METADATA
# title: 404 scanning
# description: >-
#   Distinct pages (not static assets) answered 404, counted per client
#   address: directory brute forcing and vulnerability scanners walk a
#   wordlist, while the users of a site with stale links (or of one CGNAT
#   address) hit the same few missing pages again and again. A second window
#   catches a scanner that goes slowly. Verified crawlers are not counted.
# custom:
#   characteristics: [ip.src]
#   distinct: http.path
#   windows:
#     - period: 5m
#       requests_per_period: 40
#     - period: 1h
#       requests_per_period: 120
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
	not input.bot.verified
	not strings.any_suffix_match(lower(input.http.path), static)
	not lower(input.http.path) in {"/favicon.ico", "/robots.txt", "/apple-touch-icon.png", "/apple-touch-icon-precomposed.png", "/ads.txt", "/sitemap.xml"}
}

mitigate := true

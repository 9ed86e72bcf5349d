# METADATA
# title: WordPress scanning
# description: >-
#   Requests for WordPress internals (plugins, themes, wp-admin, wp-includes,
#   the users API) that the site answers 404, counted per client address.
#   Missing images, scripts and styles are left out, so a page with broken
#   images does not trip it.
# custom:
#   characteristics: [ip.src]
#   period: 10m
#   requests_per_period: 2
#   action: block
#   mitigation_timeout: 1h
#   algorithm: sliding_window
package guardd.rules.wordpress_scan

static := {
	".css", ".js", ".mjs", ".map", ".png", ".jpg", ".jpeg", ".gif", ".webp", ".avif",
	".svg", ".ico", ".woff", ".woff2", ".ttf", ".otf", ".eot", ".mp4", ".webm", ".mp3",
}

count if {
	input.http.status == 404
	guardd.signature(input.http.norm.path, "wordpress")
	not strings.any_suffix_match(lower(input.http.norm.path), static)
}

mitigate := true

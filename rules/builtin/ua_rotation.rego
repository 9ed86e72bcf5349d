# METADATA
# title: One address cycling through user agents
# description: >-
#   Distinct user agents per address among bare requests (no referer, no
#   session cookie): a flood or a scraper that picks a new user agent for
#   each request to look like many clients. The people behind a NAT or CGNAT
#   address each send one bare request when they arrive, then carry the
#   site's cookie and a referer; a dozen new user agents in a minute from
#   one address is a tool. Only the bare requests of the address are
#   challenged: a person behind a busy NAT passes in a moment, a script
#   does not (non-page requests get the fallback, 429).
# custom:
#   characteristics: [ip.src]
#   distinct: http.user_agent
#   period: 1m
#   requests_per_period: 10
#   action: challenge
#   mitigation_timeout: 10m
#   algorithm: sliding_window
package guardd.rules.ua_rotation

static := {
	".css", ".js", ".mjs", ".map", ".png", ".jpg", ".jpeg", ".gif", ".webp", ".avif",
	".svg", ".ico", ".woff", ".woff2", ".ttf", ".otf", ".eot",
}

count if {
	input.http.user_agent
	not input.bot.verified
	not input.http.referer
	not input.http.cookies.session
	not strings.any_suffix_match(lower(input.http.path), static)
}

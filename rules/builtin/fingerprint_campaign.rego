# METADATA
# title: One browser fingerprint fetching the same page bare from many networks
# description: >-
#   A campaign that drives one client stack — one browser user agent over
#   one TLS fingerprint (JA4) — through rotating proxies in many networks,
#   each address fetching two or three of the same target pages without a
#   browser's habits: no style, script, image or font, no cookie ever
#   returned (its Referer may be forged). Counted as distinct networks
#   (ip.src.prefix, /24 or /64) per (http.host, http.norm.path,
#   http.user_agent, tls.ja4), on a session's second and third bare pages: a
#   person's first page view is bare too, and then come its assets and the
#   site's cookie, so a crowd of real browsers sharing a popular user agent
#   and JA4 (a newsletter, a sale, a company's managed browsers, a privacy
#   relay) never reaches it. While the campaign lasts, every bare view of
#   that page with that user agent and JA4 is challenged, a newcomer's
#   first included; each new network extends it. Needs JA4 (sniffing, or
#   joined onto log lines) and a log format that carries cookies.
# custom:
#   characteristics: [http.host, http.norm.path, http.user_agent, tls.ja4]
#   distinct: ip.src.prefix
#   period: 10m
#   requests_per_period: 8
#   action: challenge
#   mitigation_timeout: 30m
#   algorithm: sliding_window
package guardd.rules.fingerprint_campaign

static := {
	".css", ".js", ".mjs", ".map", ".json", ".png", ".jpg", ".jpeg", ".gif", ".webp",
	".avif", ".svg", ".ico", ".woff", ".woff2", ".ttf", ".otf", ".eot", ".mp4", ".webm",
	".mp3", ".m3u8", ".ts", ".txt", ".xml", ".webmanifest", ".wasm",
}

api := {
	"/api/", "/graphql", "/_next/", "/static/", "/assets/", "/wp-json/", "/wp-content/",
	"/wp-includes/", "/ajax", "/xhr/", "/rest/", "/socket.io/", "/sockjs", "/cdn-cgi/",
	"/__", "/.well-known/", "/health", "/metrics",
}

# Words of user agents that are not a person's browser, as they are spelt.
not_browser := {
	"bot", "Bot", "crawl", "Crawl", "spider", "Spider", "http", "preview", "Preview",
	"compatible;", "Headless", "fetch", "Fetch", "monitor", "Monitor",
}

# cookie_never first: absent on most events (and on every event of a log
# format without cookies), it rules the rule out at once. The second and
# third distinct pages without an asset: a person's first view is bare, the
# next ones bring assets or the site's cookie; a campaign's address is
# brief, and its second and third pages are enough to see it. A session
# that goes on bare page after page is session_no_assets' (and counting
# every page of a long scrape would cost a key and a distinct value each).
count if {
	input.session.cookie_never
	input.session.pages_without_assets in {2, 3}
	input.tls.ja4
	input.http.status == 200
	bare_page
}

# The session is not known when a request arrives: the challenge covers
# every bare view of the campaign's page by its user agent and JA4.
mitigate if bare_page

bare_page if {
	not input.http.cookies.session
	input.http.method in {"GET", "HEAD"}
	startswith(input.http.user_agent, "Mozilla/5.0 (")
	not strings.any_suffix_match(lower(input.http.path), static)
	not strings.any_prefix_match(lower(input.http.path), api)
	not input.bot.name
	not named_tool
}

named_tool if {
	some w in not_browser
	contains(input.http.user_agent, w)
}

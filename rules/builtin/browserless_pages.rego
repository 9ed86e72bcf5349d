# METADATA
# title: A browser's user agent without a browser's habits
# description: >-
#   Page views that a browser's user agent fetches bare — no Referer, no
#   session cookie — counted as distinct paths per (ip.src,
#   http.user_agent). A browser arrives bare once, then sends the cookie the
#   site set and the page it came from; a script with a browser's user agent
#   (a residential proxy pool fetching two to six product pages per address)
#   stays bare page after page. A weak signal: many people behind one NAT
#   address each arrive bare, so the action is a challenge of those bare
#   page views, which a person's browser passes once. User agents that name
#   a bot, a crawler or a URL are not browsers and not counted.
# custom:
#   characteristics: [ip.src, http.user_agent]
#   distinct: http.path
#   period: 10m
#   requests_per_period: 1
#   action: challenge
#   mitigation_timeout: 30m
#   algorithm: sliding_window
package guardd.rules.browserless_pages

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

# Only pages the site has (200): a web app's own fetches without a
# referer (previews, favicons, its API) are often answered 403 or 404.
count if {
	bare_page
	input.http.status == 200
}

# The status is not known when a request arrives: the challenge covers
# every bare page view of the key.
mitigate if bare_page

bare_page if {
	not input.http.referer
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

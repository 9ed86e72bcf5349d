# METADATA
# title: A form posted without the page that holds it, and no cookie
# description: >-
#   A POST from a session (one client address, until 30 minutes
#   idle) that claims a browser, has not fetched anything with GET before
#   and has never returned a cookie: a person loads the form before sending
#   it, and the site's cookie with it; a form spammer posts straight to the
#   endpoint. APIs are left out (/api/, /graphql, /wp-json/, /rest/, /ajax,
#   /xhr/, /webhook, /oauth/, /v1/-style paths ...): their clients post
#   without a page. A weak signal, with no action of its own: it adds 5 to
#   the client's anomaly score, which challenges it (a POST is never shown
#   the page: it gets 429). Needs a log format that carries cookies.
# custom:
#   characteristics: [ip.src]
#   period: 10m
#   requests_per_period: 0.5
#   action: log
#   anomaly_score: 5
#   mitigation_timeout: 30m
#   algorithm: sliding_window
package guardd.rules.session_post_without_get

# Words of user agents that are not a person's browser, as they are spelt.
not_browser := {
	"bot", "Bot", "crawl", "Crawl", "spider", "Spider", "http", "preview", "Preview",
	"compatible;", "Headless", "fetch", "Fetch", "monitor", "Monitor",
}

api := {
	"/api/", "/graphql", "/wp-json/", "/ajax", "/xhr/", "/rest/", "/socket.io/", "/sockjs",
	"/cdn-cgi/", "/__", "/.well-known/", "/webhook", "/hooks/", "/oauth/", "/token",
	"/v1/", "/v2/", "/v3/", "/rpc", "/collect", "/beacon", "/events",
}

count if {
	input.session.cookie_never
	input.http.method == "POST"
	input.session.post_without_get >= 1
	not strings.any_prefix_match(lower(input.http.path), api)
	browser
}

browser if {
	startswith(input.http.user_agent, "Mozilla/5.0 (")
	not input.bot.name
	not named_tool
}

named_tool if {
	some w in not_browser
	contains(input.http.user_agent, w)
}

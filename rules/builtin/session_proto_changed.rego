# METADATA
# title: HTTP/1.0 and a later version in one session, without a cookie
# description: >-
#   A session (one client address, until 30 minutes idle) whose request
#   claims a browser, has spoken HTTP/1.0 beside HTTP/1.1, 2 or 3, and has
#   never returned a cookie. No browser has sent
#   HTTP/1.0 in twenty years; a script that fetches a form with one library
#   and posts it with another does. A proxy that downgrades some requests of
#   a browser behind it changes the version too, but the browser keeps its
#   cookie. A weak signal, with no action of its own: it adds 5 to the
#   client's anomaly score, which challenges it. Needs a log format that
#   carries cookies.
# custom:
#   characteristics: [ip.src]
#   period: 10m
#   requests_per_period: 0.5
#   action: log
#   anomaly_score: 5
#   mitigation_timeout: 30m
#   algorithm: sliding_window
package guardd.rules.session_proto_changed

# Words of user agents that are not a person's browser, as they are spelt.
not_browser := {
	"bot", "Bot", "crawl", "Crawl", "spider", "Spider", "http", "preview", "Preview",
	"compatible;", "Headless", "fetch", "Fetch", "monitor", "Monitor",
}

count if {
	input.session.cookie_never
	input.session.proto_changed
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

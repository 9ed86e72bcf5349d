# METADATA
# title: Page after page without an asset or a cookie
# description: >-
#   A session (one client address, until 30 minutes idle) whose request
#   claims a browser, has viewed four distinct pages or more without
#   fetching a single style, script, image or font, and has never returned
#   a cookie. A browser with its assets cached skips them too, but it keeps
#   the cookie the site set on its first answer; a scraper fetching the HTML
#   only does neither. A weak signal, with no action of its own: it adds 5
#   to the client's anomaly score, which challenges it; a person's browser
#   that refuses cookies passes the challenge and goes on. Needs a log format
#   that carries cookies ($http_cookie or a $cookie_name): without one
#   session.cookie_never is absent and the rule never counts. The user
#   agent of Messages' link previews counts as a browser's here: a real
#   preview is one page, a scraper borrowing it fetches many.
# custom:
#   characteristics: [ip.src]
#   period: 10m
#   requests_per_period: 0.5
#   action: log
#   anomaly_score: 5
#   mitigation_timeout: 30m
#   algorithm: sliding_window
package guardd.rules.session_no_assets

# Words of user agents that are not a person's browser, as they are spelt.
not_browser := {
	"bot", "Bot", "crawl", "Crawl", "spider", "Spider", "http", "preview", "Preview",
	"compatible;", "Headless", "fetch", "Fetch", "monitor", "Monitor",
}

# cookie_never first: absent on most events, it rules out the session
# rules' alternatives at once. The count of pages is tested at 4, 8, 16, 32
# and 64 only: a scraper's score is renewed as it goes on, by a few trips a
# session rather than one per page (each trip costs the anomaly score and
# the mitigation table some work).
count if {
	input.session.cookie_never
	input.session.pages_without_assets in {4, 8, 16, 32, 64}
	browser
}

browser if {
	startswith(input.http.user_agent, "Mozilla/5.0 (")
	not input.bot.name
	not named_tool
}

# The link preview of iOS and macOS Messages is a device, not a crawler
# (fake_crawler leaves it alone): it fetches one page and its image, so a
# client that fetches page after page bare with its user agent is a
# scraper borrowing it, judged like any other.
browser if contains(input.http.user_agent, "facebookexternalhit/1.1 Facebot Twitterbot/1.0")

named_tool if {
	some w in not_browser
	contains(input.http.user_agent, w)
}

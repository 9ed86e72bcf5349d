package guardd.rules.fingerprint_campaign_test

import data.guardd.rules.fingerprint_campaign as rule

chrome := "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

ja4 := "t13d1516h2_8daaf6152771_e5627efa2ab1"

bare := {"requests": 2, "pages": 2, "pages_without_assets": 2, "post_without_get": 0, "cookie_never": true}

view(ua, session) := {
	"http": {"host": "shop.example", "method": "GET", "path": "/product/77", "norm": {"path": "/product/77"}, "status": 200, "user_agent": ua, "referer": "https://shop.example/", "cookies": {}, "headers": {}},
	"ip": {"src": "198.51.100.7", "prefix": "198.51.100.0/24"},
	"tls": {"ja4": ja4},
	"bot": {},
	"session": session,
}

# A forged Referer does not help: the session never kept a cookie nor
# fetched an asset.
test_counts_second_bare_page_of_a_session if {
	rule.count with input as view(chrome, bare)
}

# A person's first view is bare; the next brings assets or the cookie.
test_ignores_first_page_of_a_session if {
	not rule.count with input as view(chrome, object.union(bare, {"requests": 1, "pages": 1, "pages_without_assets": 1}))
}

# The second and third bare pages find a brief address; a long bare
# session is session_no_assets'.
test_counts_second_and_third_bare_pages_only if {
	rule.count with input as view(chrome, object.union(bare, {"requests": 3, "pages": 3, "pages_without_assets": 3}))
	not rule.count with input as view(chrome, object.union(bare, {"requests": 4, "pages": 4, "pages_without_assets": 4}))
}

test_ignores_sessions_with_assets_or_a_cookie if {
	not rule.count with input as view(chrome, object.union(bare, {"pages_without_assets": 0}))
	not rule.count with input as view(chrome, json.remove(bare, ["cookie_never"]))
}

test_needs_a_fingerprint_and_a_session if {
	not rule.count with input as json.remove(view(chrome, bare), ["tls"])
	not rule.count with input as json.remove(view(chrome, bare), ["session"])
}

test_ignores_tools_crawlers_and_link_previews if {
	not rule.count with input as view("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", bare)
	not rule.count with input as view("Mozilla/5.0+(compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)", bare)
	not rule.count with input as view("python-requests/2.32.3", bare)
	not rule.count with input as view("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 (KHTML, like Gecko) Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0", bare)
}

test_ignores_assets_and_api_calls if {
	not rule.count with input as object.union(view(chrome, bare), {"http": {"path": "/static/app.js"}})
	not rule.count with input as object.union(view(chrome, bare), {"http": {"path": "/api/cart"}})
}

# A newcomer to the campaign is challenged on its first bare view, before
# its session says anything; a browser carrying the site's cookie is not.
test_mitigates_first_bare_view if {
	rule.mitigate with input as json.remove(view(chrome, bare), ["session", "http/status"])
	not rule.mitigate with input as object.union(view(chrome, bare), {"http": {"cookies": {"session": "s1"}}})
	not rule.mitigate with input as object.union(view(chrome, bare), {"http": {"method": "POST"}})
}

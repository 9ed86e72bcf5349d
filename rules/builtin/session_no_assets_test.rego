package guardd.rules.session_no_assets_test

import data.guardd.rules.session_no_assets as rule

chrome := "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

page(ua, session) := {"http": {"method": "GET", "path": "/product/9", "status": 200, "user_agent": ua, "referer": "https://shop.example/products", "cookies": {}, "headers": {}}, "bot": {}, "session": session}

test_counts_fourth_bare_page_without_a_cookie if {
	rule.count with input as page(chrome, {"requests": 4, "pages": 4, "pages_without_assets": 4, "post_without_get": 0, "cookie_never": true})
}

# Tested at 4, 8, 16, 32 and 64 distinct pages, not at every page.
test_counts_at_milestones_only if {
	rule.count with input as page(chrome, {"requests": 9, "pages": 9, "pages_without_assets": 8, "post_without_get": 0, "cookie_never": true})
	not rule.count with input as page(chrome, {"requests": 6, "pages": 6, "pages_without_assets": 5, "post_without_get": 0, "cookie_never": true})
}

test_ignores_three_pages if {
	not rule.count with input as page(chrome, {"requests": 3, "pages": 3, "pages_without_assets": 3, "post_without_get": 0, "cookie_never": true})
}

# Assets cached: pages only, but the cookie of the last visit.
test_ignores_cached_assets_with_a_cookie if {
	not rule.count with input as page(chrome, {"requests": 9, "pages": 9, "pages_without_assets": 9, "post_without_get": 0})
}

test_ignores_session_with_assets if {
	not rule.count with input as page(chrome, {"requests": 30, "pages": 9, "pages_without_assets": 0, "post_without_get": 0, "cookie_never": true})
}

# No session (the decision API, a log without cookies): nothing to say.
test_ignores_unknown_session if {
	not rule.count with input as {"http": {"method": "GET", "path": "/product/9", "user_agent": chrome, "cookies": {}, "headers": {}}, "bot": {}}
}

test_ignores_tools_and_crawlers if {
	s := {"requests": 9, "pages": 9, "pages_without_assets": 9, "post_without_get": 0, "cookie_never": true}
	not rule.count with input as page("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", s)
	not rule.count with input as page("python-requests/2.32.3", s)
	not rule.count with input as page("Mozilla/5.0 (compatible; Miniflux/2.2.3; +https://miniflux.app)", s)
	not rule.count with input as page("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36", s)
}

# fake_crawler leaves Messages' link previews alone; one fetching page
# after page bare is a scraper borrowing its user agent.
test_counts_scraper_with_link_preview_user_agent if {
	s := {"requests": 4, "pages": 4, "pages_without_assets": 4, "post_without_get": 0, "cookie_never": true}
	imessage := "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 (KHTML, like Gecko) Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0"
	rule.count with input as object.union(page(imessage, s), {"bot": {"name": "facebook"}})
}

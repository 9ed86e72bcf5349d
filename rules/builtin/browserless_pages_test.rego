package guardd.rules.browserless_pages_test

import data.guardd.rules.browserless_pages as rule

chrome := "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

page(ua, ref, cookies) := {"http": {"method": "GET", "path": "/product/9", "status": 200, "user_agent": ua, "referer": ref, "cookies": cookies, "headers": {}}}

bare(ua) := {"http": {"method": "GET", "path": "/product/9", "status": 200, "user_agent": ua, "cookies": {}, "headers": {}}}

test_counts_bare_page_of_a_browser_user_agent if {
	rule.count with input as bare(chrome)
}

test_ignores_page_with_referer_or_cookie if {
	not rule.count with input as page(chrome, "https://shop.example/", {})
	not rule.count with input as {"http": {"method": "GET", "path": "/product/9", "user_agent": chrome, "cookies": {"session": "s1"}, "headers": {}}}
}

test_ignores_tools_and_crawlers if {
	not rule.count with input as bare("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)")
	not rule.count with input as bare("Mozilla/5.0+(compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)")
	not rule.count with input as bare("python-requests/2.32.3")
	not rule.count with input as bare("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36")
}

test_ignores_assets if {
	not rule.count with input as {"http": {"method": "GET", "path": "/static/app.js", "user_agent": chrome, "cookies": {}, "headers": {}}}
}

test_ignores_app_fetch_answered_404 if {
	not rule.count with input as {"http": {"method": "GET", "path": "/apps/bookmarks/bookmark/1/favicon", "status": 404, "user_agent": chrome, "cookies": {}, "headers": {}}}
}

test_mitigates_bare_page_before_its_answer if {
	rule.mitigate with input as {"http": {"method": "GET", "path": "/product/10", "user_agent": chrome, "cookies": {}, "headers": {}}}
}

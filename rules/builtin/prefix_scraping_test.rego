package guardd.rules.prefix_scraping_test

import data.guardd.rules.prefix_scraping as rule

view := {"http": {"method": "GET", "path": "/product/42", "status": 200, "user_agent": "Mozilla/5.0 Chrome/131.0.0.0", "headers": {}, "cookies": {}}, "ip": {"src": "198.18.7.9", "prefix": "198.18.7.0/24"}}

test_counts_bare_page_views if rule.count with input as view

test_ignores_browsing_sessions if {
	not rule.count with input as object.union(view, {"http": {"referer": "https://shop.example/"}})
	not rule.count with input as object.union(view, {"http": {"cookies": {"session": "s1"}}})
}

test_ignores_assets_and_verified_crawlers if {
	not rule.count with input as object.union(view, {"http": {"path": "/static/app.js"}})
	not rule.count with input as object.union(view, {"bot": {"name": "googlebot", "verified": true}})
}

test_counts_whatever_the_user_agent if {
	rule.count with input as object.union(view, {"http": {"user_agent": "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X)"}})
	rule.count with input as object.union(view, {"http": {"user_agent": ""}})
}

test_ignores_verified_seo_crawler if {
	not rule.count with input as object.union(view, {"bot": {"name": "ahrefsbot", "verified": true}})
}

package guardd.rules.ua_rotation_test

import data.guardd.rules.ua_rotation as rule

bare := {"http": {"method": "GET", "path": "/", "status": 200, "user_agent": "Mozilla/5.0 Firefox/36.0", "headers": {}, "cookies": {}}, "ip": {"src": "192.0.2.4"}}

test_counts_bare_requests if rule.count with input as bare

test_ignores_sessions_assets_and_crawlers if {
	not rule.count with input as object.union(bare, {"http": {"referer": "https://shop.example/"}})
	not rule.count with input as object.union(bare, {"http": {"cookies": {"session": "s"}}})
	not rule.count with input as object.union(bare, {"http": {"path": "/static/app.js"}})
	not rule.count with input as object.union(bare, {"bot": {"name": "googlebot", "verified": true}})
}

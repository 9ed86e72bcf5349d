package guardd.rules.scan_404_test

import data.guardd.rules.scan_404 as rule

req(path, status) := {"http": {"method": "GET", "path": path, "status": status, "headers": {}, "cookies": {}}, "ip": {"src": "192.0.2.44"}}

test_counts_missing_pages if {
	rule.count with input as req("/admin/backup", 404)
	rule.count with input as req("/old-page.html", 404)
}

test_ignores_missing_assets if {
	every p in ["/img/Logo.PNG", "/static/app.js", "/fonts/x.woff2", "/favicon.ico", "/robots.txt", "/apple-touch-icon.png"] {
		not rule.count with input as req(p, 404)
	}
}

test_ignores_found_pages if not rule.count with input as req("/products", 200)

test_mitigates_everything if rule.mitigate with input as req("/", 200)

test_ignores_verified_crawlers if not rule.count with input as object.union(req("/gone", 404), {"bot": {"name": "bingbot", "verified": true}})

package guardd.rules.asn_scraping_test

import data.guardd.rules.asn_scraping as rule

page(path) := {"http": {"method": "GET", "path": path, "status": 200, "headers": {}, "cookies": {}}, "ip": {"src": "192.0.2.44", "asnum": 16509}}

test_counts_page_views_with_known_asn if rule.count with input as page("/products/42")

test_ignores_unknown_asn if not rule.count with input as json.remove(page("/products/42"), ["ip/asnum"])

test_ignores_assets_and_api if {
	not rule.count with input as page("/static/app.js")
	not rule.count with input as page("/api/v1/items")
}

package guardd.rules.prefix_campaign_test

import data.guardd.rules.prefix_campaign

page(extra) := object.union({"ip": {"src": "198.51.100.7", "prefix": "198.51.100.0/24"}, "http": {"method": "GET", "path": "/product/7", "status": 200, "cookies": {}, "headers": {}}}, extra)

test_counts_bare_page_view if {
	prefix_campaign.count with input as page({})
}

test_ignores_page_with_referer if {
	not prefix_campaign.count with input as page({"http": {"method": "GET", "path": "/product/7", "referer": "https://shop.example/", "cookies": {}, "headers": {}}})
}

test_ignores_page_with_session if {
	not prefix_campaign.count with input as page({"http": {"method": "GET", "path": "/product/7", "cookies": {"session": "s1"}, "headers": {}}})
}

test_ignores_assets_and_api if {
	not prefix_campaign.count with input as page({"http": {"method": "GET", "path": "/static/app.js", "cookies": {}, "headers": {}}})
	not prefix_campaign.count with input as page({"http": {"method": "GET", "path": "/api/products", "cookies": {}, "headers": {}}})
}

test_ignores_verified_crawler if {
	not prefix_campaign.count with input as page({"bot": {"name": "ahrefsbot", "verified": true}})
}

package guardd.rules.aggressive_crawl_test

import data.guardd.rules.aggressive_crawl as rule

page(path) := {"http": {"method": "GET", "path": path, "status": 200, "headers": {}, "cookies": {}}, "ip": {"src": "192.0.2.44"}}

with_header(path, name, value) := object.union(page(path), {"http": {"headers": {name: value}}})

test_counts_page_views if {
	rule.count with input as page("/products/42")
	rule.count with input as with_header("/blog", "sec-fetch-dest", "document")
}

test_ignores_static_assets if {
	every p in ["/static/app.3f2a.js", "/img/hero.WEBP", "/main.css", "/data/feed.json", "/manifest.webmanifest"] {
		not rule.count with input as page(p)
	}
}

test_ignores_api_and_xhr if {
	not rule.count with input as page("/api/v1/items")
	not rule.count with input as page("/graphql")
	not rule.count with input as page("/_next/data/build/page.json")
	not rule.count with input as with_header("/cart", "x-requested-with", "XMLHttpRequest")
	not rule.count with input as with_header("/cart", "sec-fetch-dest", "empty")
}

test_ignores_writes if not rule.count with input as object.union(page("/cart"), {"http": {"method": "POST"}})

test_ignores_sessions_and_verified_crawlers if {
	not rule.count with input as object.union(page("/cart"), {"http": {"cookies": {"session": "s1"}}})
	not rule.count with input as object.union(page("/cart"), {"bot": {"name": "googlebot", "verified": true}})
	rule.count with input as object.union(page("/cart"), {"bot": {"name": "googlebot"}})
}

package guardd.rules.regular_scraping_test

import data.guardd.rules.regular_scraping as rule

page(path) := {"http": {"method": "GET", "path": path, "status": 200, "headers": {}, "cookies": {}, "user_agent": "python-requests/2.32.3"}, "ip": {"src": "192.0.2.44"}}

with_header(path, name, value) := object.union(page(path), {"http": {"headers": {name: value}}})

test_counts_page_views if {
	rule.count with input as page("/product/42")
	rule.count with input as object.union(page("/product/42"), {"http": {"method": "HEAD"}})
	rule.count with input as object.union(page("/blog"), {"http": {"cookies": {"session": "s1"}}})
	rule.count with input as with_header("/blog", "sec-fetch-dest", "document")
}

test_ignores_assets if {
	every p in ["/static/app.3f2a.js", "/img/hero.WEBP", "/main.css", "/feed.xml", "/robots.txt"] {
		not rule.count with input as page(p)
	}
}

# Single-page apps poll their API, monitors their health endpoint, at
# regular intervals.
test_ignores_api_polling_and_health_checks if {
	every p in ["/api/v1/notifications", "/graphql", "/health", "/healthz", "/status", "/ping", "/metrics"] {
		not rule.count with input as page(p)
	}
	not rule.count with input as with_header("/cart", "x-requested-with", "XMLHttpRequest")
	not rule.count with input as with_header("/cart", "sec-fetch-dest", "empty")
}

test_ignores_writes if not rule.count with input as object.union(page("/cart"), {"http": {"method": "POST"}})

test_ignores_verified_crawlers if {
	not rule.count with input as object.union(page("/product/1"), {"bot": {"name": "googlebot", "verified": true}})
	rule.count with input as object.union(page("/product/1"), {"bot": {"name": "googlebot"}})
}

# People following links and single-page apps calling their back end send a
# referer; a sleep loop does not.
test_ignores_requests_with_a_referer if {
	not rule.count with input as object.union(page("/product/2"), {"http": {"referer": "https://shop.example/product/1"}})
	not rule.count with input as object.union(page("/v1/items/42"), {"http": {"referer": "https://shop.example/app"}})
}

package guardd.rules.api_enumeration_test

import data.guardd.rules.api_enumeration

test_counts_paging if {
	api_enumeration.count with input as {"http": {"method": "GET", "path": "/api/products", "query": "page=17", "args": {"page": "17"}}}
	api_enumeration.count with input as {"http": {"method": "GET", "path": "/api/items", "query": "offset=400&limit=50", "args": {"offset": "400", "limit": "50"}}}
}

test_ignores_first_pages if {
	not api_enumeration.count with input as {"http": {"method": "GET", "path": "/api/products", "query": "page=2", "args": {"page": "2"}}}
}

test_ignores_calls_without_paging if {
	not api_enumeration.count with input as {"http": {"method": "GET", "path": "/api/cart", "args": {}}}
}

test_ignores_posts if {
	not api_enumeration.count with input as {"http": {"method": "POST", "path": "/api/products", "query": "page=20", "args": {"page": "20"}}}
}

test_ignores_verified_crawler if {
	not api_enumeration.count with input as {"bot": {"name": "googlebot", "verified": true}, "http": {"method": "GET", "path": "/api/products", "query": "page=2", "args": {"page": "2"}}}
}

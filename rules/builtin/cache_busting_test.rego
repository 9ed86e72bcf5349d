package guardd.rules.cache_busting_test

import data.guardd.rules.cache_busting as rule

req(path, query) := {"http": {"method": "GET", "path": path, "query": query, "status": 200, "headers": {}, "cookies": {}}, "ip": {"src": "192.0.2.4"}}

test_counts_queries_on_pages if rule.count with input as req("/", "8890121518")

test_ignores_api_assets_and_bare_pages if {
	not rule.count with input as req("/api/search", "q=ab")
	not rule.count with input as req("/static/app.js", "v=3")
	not rule.count with input as json.remove(req("/", "x"), ["http/query"])
}

package guardd.rules.slow_upstream_test

import data.guardd.rules.slow_upstream as rule

req := {"http": {"path": "/api/search", "headers": {"x-api-key": "k1"}, "request_time": 2.5}, "ip": {"src": "198.51.100.3"}}

test_counts_api_calls_with_key if rule.count with input as req

test_skips_internal_clients if not rule.count with input as object.union(req, {"ip": {"src": "10.2.3.4"}})

test_skips_calls_without_key if not rule.count with input as json.remove(req, ["http/headers/x-api-key"])

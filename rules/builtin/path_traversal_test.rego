package guardd.rules.path_traversal_test

import data.guardd.rules.path_traversal as rule

req(anomalies, query) := {"http": {"method": "GET", "path": "/x", "query": query, "norm": {"path": "/x", "query": query}, "anomalies": anomalies, "headers": {}, "cookies": {}}}

test_traversal_in_path if rule.count with input as req({"traversal": true, "dot_segment": true}, "")

test_overlong if rule.count with input as req({"overlong_utf8": true}, "")

test_traversal_in_query if rule.count with input as req({}, "file=../../../../etc/hosts")

test_ignores_plain_requests if {
	not rule.count with input as req({}, "page=2")
	not rule.count with input as req({"repeated_slash": true, "dot_segment": true}, "next=../account")
}

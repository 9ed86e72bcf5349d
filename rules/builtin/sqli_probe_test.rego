package guardd.rules.sqli_probe_test

import data.guardd.rules.sqli_probe as rule

req(q) := {"http": {"method": "GET", "path": "/foo", "query": q, "norm": {"query": q}, "headers": {}, "cookies": {}}}

test_counts_probe_fragments if {
	rule.count with input as req("a= union all select ")
	rule.count with input as req("a=information_schema.tables")
	rule.count with input as req("a=1 and sleep(5)")
}

test_ignores_searches if {
	not rule.count with input as req("q=select dining chairs")
	not rule.count with input as req("q=union station")
}

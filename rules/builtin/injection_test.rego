package guardd.rules.injection_test

import data.guardd.rules.injection as rule

req(path, query) := {"http": {"method": "GET", "path": path, "query": query, "status": 200, "norm": {"path": path}, "headers": {}, "cookies": {}}}

test_sqli if {
	rule.count with input as req("/item", "id=1%27%20or%20%271%27=%271")
	rule.count with input as req("/item", "id=1+UNION+SELECT+NULL,NULL--")
}

test_xss if {
	rule.count with input as req("/foo", "a=%3Cscript%3Ealert(1)%3C/script%3E")
	rule.count with input as req("/foo", "a=<svg/onload=prompt(1)>")
	rule.count with input as req("/<script>alert(1)</script>", "")
}

test_search_words_are_not_sql if {
	every q in ["q=select+dining+chairs", "q=union+station", "q=drop+table+lamp", "q=O%27Reilly+books", "q=rock+%26+roll", "sort=-price&from=2024-05-01"] {
		not rule.count with input as req("/search", q)
	}
}

package guardd.rules.aggressive_crawl_session_test

import data.guardd.rules.aggressive_crawl_session as rule

view(cookies) := {"http": {"method": "GET", "path": "/product/42", "status": 200, "headers": {}, "cookies": cookies}, "ip": {"src": "198.51.100.7"}}

test_counts_page_views_of_a_session if rule.count with input as view({"session": "s1"})

test_ignores_views_without_session if not rule.count with input as view({})

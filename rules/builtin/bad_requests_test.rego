package guardd.rules.bad_requests_test

import data.guardd.rules.bad_requests as rule

test_counts_400 if rule.count with input as {"http": {"status": 400, "headers": {}, "cookies": {}}}

test_ignores_others if not rule.count with input as {"http": {"status": 404, "headers": {}, "cookies": {}}}

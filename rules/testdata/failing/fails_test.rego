package guardd.rules.fails_test

import data.guardd.rules.fails

test_passes if fails.count with input as {"http": {"status": 404}}

test_fails if fails.count with input as {"http": {"status": 200}}

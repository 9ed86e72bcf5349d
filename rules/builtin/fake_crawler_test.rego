package guardd.rules.fake_crawler_test

import data.guardd.rules.fake_crawler as rule

req(bot) := {"http": {"method": "GET", "path": "/", "user_agent": "Mozilla/5.0 (compatible; Googlebot/2.1)", "headers": {}, "cookies": {}}, "ip": {"src": "203.0.113.9"}, "bot": bot}

test_counts_unverified_crawler if rule.count with input as req({"name": "googlebot"})

test_ignores_verified_crawler if not rule.count with input as req({"name": "googlebot", "verified": true})

test_ignores_other_clients if not rule.count with input as req({})

test_ignores_name_not_yet_checked if {
	not rule.count with input as req({"name": "yandex", "pending": true})
}

test_counts_name_that_failed_its_lookup if {
	rule.count with input as req({"name": "yandex"})
}

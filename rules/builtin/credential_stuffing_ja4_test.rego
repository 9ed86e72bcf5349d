package guardd.rules.credential_stuffing_ja4_test

import data.guardd.rules.credential_stuffing_ja4 as rule

ja4 := "t13d1516h2_8daaf6152771_02713d6af862"

attempt(status) := {
	"http": {"method": "POST", "path": "/login", "status": status, "headers": {}, "cookies": {}},
	"ip": {"src": "198.51.100.77"},
	"tls": {"ja4": ja4},
}

test_counts_failed_login_with_fingerprint if rule.count with input as attempt(401)

test_ignores_successful_login if not rule.count with input as attempt(200)

test_ignores_events_without_fingerprint if {
	not rule.count with input as json.remove(attempt(401), ["tls/ja4"])
}

test_mitigates_login_posts_only if {
	rule.mitigate with input as attempt(200)
	not rule.mitigate with input as object.union(attempt(200), {"http": {"method": "GET"}})
	not rule.mitigate with input as object.union(attempt(200), {"http": {"path": "/products"}})
}

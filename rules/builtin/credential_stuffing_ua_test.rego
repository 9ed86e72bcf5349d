package guardd.rules.credential_stuffing_ua_test

import data.guardd.rules.credential_stuffing_ua as rule

attempt(status) := {
	"http": {"method": "POST", "path": "/users/sign_in", "status": status, "user_agent": "python-requests/2.31.0", "headers": {}, "cookies": {}},
	"ip": {"src": "198.51.100.77"},
}

test_counts_failed_login if rule.count with input as attempt(403)

test_counts_without_user_agent if {
	# A missing User-Agent is a key of its own, and a telling one.
	rule.count with input as json.remove(attempt(401), ["http/user_agent"])
}

test_ignores_successful_login if not rule.count with input as attempt(302)

test_mitigates_login_posts_only if {
	rule.mitigate with input as attempt(200)
	not rule.mitigate with input as object.union(attempt(200), {"http": {"path": "/"}})
}

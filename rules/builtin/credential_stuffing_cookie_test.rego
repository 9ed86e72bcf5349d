package guardd.rules.credential_stuffing_cookie_test

import data.guardd.rules.credential_stuffing_cookie as rule

attempt(status, cookies) := {
	"http": {"method": "POST", "path": "/users/sign_in", "status": status, "headers": {}, "cookies": cookies},
	"ip": {"src": "198.51.100.77"},
}

test_counts_failed_login_with_session if rule.count with input as attempt(401, {"session": "abc"})

test_ignores_login_without_session if not rule.count with input as attempt(401, {})

test_ignores_successful_login if not rule.count with input as attempt(302, {"session": "abc"})

test_ignores_other_paths if {
	not rule.count with input as object.union(attempt(401, {"session": "abc"}), {"http": {"path": "/search"}})
}

test_mitigates_everything_with_the_cookie if {
	rule.mitigate with input as object.union(attempt(200, {"session": "abc"}), {"http": {"method": "GET", "path": "/"}})
	not rule.mitigate with input as attempt(200, {})
}

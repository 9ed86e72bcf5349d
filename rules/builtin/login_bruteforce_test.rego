package guardd.rules.login_bruteforce_test

import data.guardd.rules.login_bruteforce

failed_login := {"http": {"method": "POST", "path": "/login", "status": 401, "headers": {}, "cookies": {}}, "ip": {"src": "203.0.113.7"}}

test_counts_failed_post if login_bruteforce.count with input as failed_login

test_counts_forbidden_wp_login if {
	login_bruteforce.count with input as object.union(failed_login, {"http": {"method": "POST", "path": "/WP-Login.php", "status": 403}})
}

test_ignores_successful_login if {
	not login_bruteforce.count with input as object.union(failed_login, {"http": {"method": "POST", "path": "/login", "status": 302}})
}

test_ignores_get_of_login_page if {
	not login_bruteforce.count with input as object.union(failed_login, {"http": {"method": "GET", "path": "/login", "status": 401}})
}

test_ignores_other_paths if {
	not login_bruteforce.count with input as object.union(failed_login, {"http": {"method": "POST", "path": "/api/orders", "status": 401}})
}

test_mitigates_login_only if {
	login_bruteforce.mitigate with input as {"http": {"method": "GET", "path": "/login"}}
	not login_bruteforce.mitigate with input as {"http": {"method": "GET", "path": "/"}}
}

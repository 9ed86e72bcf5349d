package guardd.rules.login_bruteforce_test

import data.guardd.rules.login_bruteforce

post(path, status) := {"http": {"method": "POST", "path": path, "status": status, "norm": {"path": path}, "headers": {}, "cookies": {}}, "ip": {"src": "203.0.113.7"}, "log": {}}

test_counts_failed_post if login_bruteforce.count with input as post("/login", 401)

test_counts_forbidden_wp_login if login_bruteforce.count with input as post("/WP-Login.php", 403)

test_counts_wordpress_failures_answered_200 if {
	login_bruteforce.count with input as post("/wp-login.php", 200)
	login_bruteforce.count with input as post("/blog/xmlrpc.php", 200)
}

test_counts_forms_shown_again if login_bruteforce.count with input as post("/apps/login", 200)

test_json_login_success_is_not_a_failure if not login_bruteforce.count with input as post("/api/v1/login", 200)

test_counts_basic_auth_refused_with_a_user if {
	login_bruteforce.count with input as object.union(post("/client", 401), {"log": {"remote_user": "test"}})
	not login_bruteforce.count with input as object.union(post("/client", 401), {"log": {"remote_user": "-"}})
	not login_bruteforce.count with input as {"http": {"method": "GET", "path": "/dashboard/", "status": 401, "norm": {"path": "/dashboard/"}}, "log": {}}
}

test_ignores_successful_login if not login_bruteforce.count with input as post("/login", 302)

test_ignores_get_of_login_page if {
	not login_bruteforce.count with input as {"http": {"method": "GET", "path": "/login", "status": 200, "norm": {"path": "/login"}}, "log": {}}
}

test_ignores_other_paths if not login_bruteforce.count with input as post("/api/orders", 401)

test_mitigates_login_only if {
	login_bruteforce.mitigate with input as {"http": {"method": "GET", "path": "/login", "norm": {"path": "/login"}, "status": 200}}
	not login_bruteforce.mitigate with input as {"http": {"method": "GET", "path": "/", "norm": {"path": "/"}, "status": 200}}
}

test_counts_failure_redirected_to_the_form if {
	login_bruteforce.count with input as {"http": {"method": "GET", "path": "/login", "norm": {"path": "/login"}, "query": "error=1", "args": {"error": "1"}, "status": 200}}
}

test_ignores_the_form_itself if {
	not login_bruteforce.count with input as {"http": {"method": "GET", "path": "/login", "norm": {"path": "/login"}, "args": {"next": "/account"}, "status": 200}}
}

# METADATA
# title: Login brute force
# description: >-
#   Failed logins counted per client address, as sites really answer them: a
#   POST to a login endpoint answered 401 or 403; a POST to WordPress'
#   wp-login.php or xmlrpc.php answered 200 (WordPress re-renders the form on
#   failure and redirects on success); a POST to a login form (not a JSON API)
#   answered 200, the form shown again; a POST to a login endpoint the site
#   does not have (404); and HTTP basic authentication refused (401) with a
#   user name, on any path.
# custom:
#   characteristics: [ip.src]
#   period: 5m
#   requests_per_period: 5
#   windows: [{period: 1h, requests_per_period: 10}]
#   action: block
#   mitigation_timeout: 30m
#   algorithm: sliding_window
package guardd.rules.login_bruteforce

login_paths := {"/login", "/signin", "/sign-in", "/logon", "/auth", "/session", "/sessions", "/user/login", "/users/sign_in", "/account/login", "/accounts/login", "/api/login", "/api/auth/login", "/api/v1/login", "/oauth/token", "/wp-login.php", "/xmlrpc.php", "/administrator/index.php"}

# Ends of login form paths, wherever the application is mounted.
login_suffixes := {"/login", "/signin", "/sign-in", "/logon", "/login.php", "/user/login", "/account/login", "/admin/login", "/users/sign_in", "/wp-login.php", "/xmlrpc.php", "/session", "/sessions"}

count if {
	input.http.method == "POST"
	lower(input.http.norm.path) in login_paths
	input.http.status in {401, 403, 404}
}

count if {
	input.http.method == "POST"
	strings.any_suffix_match(lower(input.http.norm.path), login_suffixes)
	input.http.status in {401, 403, 404}
}

count if {
	input.http.method == "POST"
	strings.any_suffix_match(lower(input.http.norm.path), login_suffixes)
	input.http.status == 200
	not contains(lower(input.http.norm.path), "/api/")
}

count if {
	input.http.status == 401
	input.log.remote_user != ""
	input.log.remote_user != "-"
}

mitigate if strings.any_suffix_match(lower(input.http.norm.path), login_suffixes)

mitigate if lower(input.http.norm.path) in login_paths

mitigate if input.http.status == 401

# METADATA
# title: Login brute force
# description: POSTs to login endpoints answered 401 or 403, counted per client address.
# custom:
#   characteristics: [ip.src]
#   period: 5m
#   requests_per_period: 20
#   windows: [{period: 1h, requests_per_period: 10}]
#   action: block
#   mitigation_timeout: 30m
#   algorithm: sliding_window
package guardd.rules.login_bruteforce

login_paths := {"/login", "/signin", "/sign-in", "/logon", "/auth", "/session", "/sessions", "/user/login", "/users/sign_in", "/account/login", "/accounts/login", "/api/login", "/api/auth/login", "/api/v1/login", "/oauth/token", "/wp-login.php", "/xmlrpc.php", "/administrator/index.php"}

count if {
	input.http.method == "POST"
	lower(input.http.path) in login_paths
	input.http.status in {401, 403}
}

mitigate if lower(input.http.path) in login_paths

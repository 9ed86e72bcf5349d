# METADATA
# title: Credential stuffing by user agent and login path
# description: >-
#   Failed login POSTs counted per (User-Agent, path). Stuffing tools keep one
#   user agent while they rotate addresses, and both fields are in nginx's
#   default combined log format, so this works from logs alone.
# custom:
#   characteristics: [http.user_agent, http.path]
#   period: 10m
#   requests_per_period: 100
#   action: rate_limit
#   mitigation_timeout: 15m
#   algorithm: sliding_window
package guardd.rules.credential_stuffing_ua

login_paths := {"/login", "/signin", "/sign-in", "/logon", "/auth", "/session", "/sessions", "/user/login", "/users/sign_in", "/account/login", "/accounts/login", "/api/login", "/api/auth/login", "/api/v1/login", "/oauth/token", "/wp-login.php", "/xmlrpc.php", "/administrator/index.php"}

count if {
	input.http.method == "POST"
	lower(input.http.path) in login_paths
	input.http.status in {401, 403}
}

mitigate if {
	input.http.method == "POST"
	lower(input.http.path) in login_paths
}

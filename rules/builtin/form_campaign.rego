# METADATA
# title: Form posts without a browser's referer from many addresses
# description: >-
#   POSTs to a login, registration, password-reset or XML-RPC endpoint
#   without a Referer, counted as distinct addresses per (http.host,
#   http.norm.path): credential stuffing at one or two tries per address,
#   account-creation spam, an xmlrpc.php brute force spread over hundreds of
#   addresses. A browser submitting a form sends the page it came from; a
#   script posting straight to the endpoint does not. JSON APIs (paths with
#   /api/ or /oauth/) are left out: their clients send no Referer. While the
#   campaign lasts, every such POST to that endpoint, from any address, gets
#   the challenge's fallback (a POST is never shown a page): 429.
# custom:
#   characteristics: [http.host, http.norm.path]
#   distinct: ip.src
#   period: 10m
#   requests_per_period: 2
#   action: challenge
#   challenge_fallback: rate_limit
#   mitigation_timeout: 30m
#   algorithm: sliding_window
package guardd.rules.form_campaign

import data.guardd.config

# The login endpoints are the configuration's rules.login_paths (docs/rules.md).
login_path(path) if path in config.login_paths

login_path(path) if strings.any_prefix_match(path, config.login_prefixes)

login_path(path) if strings.any_suffix_match(path, config.login_suffixes)

# Registration and password-reset forms wherever the application is mounted.
form_suffixes := {
	"/register", "/signup", "/sign-up", "/sign_up", "/join", "/join_form", "/registration",
	"/wp-signup.php", "/user/register", "/users", "/account/create", "/accounts/signup",
	"/password/reset", "/password/forgot", "/forgot-password", "/forgot_password",
	"/reset-password", "/lostpassword", "/users/password", "/xmlrpc.php",
}

form_path(path) if login_path(path)

form_path(path) if strings.any_suffix_match(path, form_suffixes)

count if {
	input.http.method == "POST"
	not input.http.referer
	path := lower(input.http.norm.path)
	form_path(path)
	not contains(path, "/api/")
	not contains(path, "/oauth/")
}

# METADATA
# title: Credential stuffing by session cookie
# description: >-
#   Failed login POSTs counted per session cookie. Stuffing tools often fetch
#   one session (to pass a first-visit check) and replay it through many proxy
#   addresses; a person has a session of their own and fails a login a few
#   times at most. The cookie is the attacker's alone, so everything carrying
#   it is blocked. Needs the cookie in the log ($cookie_session); adapt the
#   cookie name to your site (copy the rule into your rules directory and
#   change both "session" below).
# custom:
#   characteristics: ['http.cookies["session"]']
#   period: 10m
#   requests_per_period: 20
#   action: block
#   mitigation_timeout: 30m
#   algorithm: sliding_window
package guardd.rules.credential_stuffing_cookie

login_paths := {"/login", "/signin", "/sign-in", "/logon", "/auth", "/session", "/sessions", "/user/login", "/users/sign_in", "/account/login", "/accounts/login", "/api/login", "/api/auth/login", "/api/v1/login", "/oauth/token", "/wp-login.php", "/xmlrpc.php", "/administrator/index.php"}

count if {
	input.http.cookies.session
	input.http.method == "POST"
	lower(input.http.path) in login_paths
	input.http.status in {401, 403}
}

mitigate if input.http.cookies.session

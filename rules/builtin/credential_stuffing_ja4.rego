# METADATA
# title: Credential stuffing by TLS fingerprint
# description: >-
#   Failed login POSTs counted per JA4 fingerprint, which stays the same when
#   a stuffing tool rotates through proxy addresses. Needs JA4 from sniffing
#   (or joined onto log lines); events without one are not counted.
# custom:
#   characteristics: [tls.ja4]
#   period: 10m
#   requests_per_period: 150
#   action: rate_limit
#   mitigation_timeout: 15m
#   algorithm: sliding_window
package guardd.rules.credential_stuffing_ja4

login_paths := {"/login", "/signin", "/sign-in", "/logon", "/auth", "/session", "/sessions", "/user/login", "/users/sign_in", "/account/login", "/accounts/login", "/api/login", "/api/auth/login", "/api/v1/login", "/oauth/token", "/wp-login.php", "/xmlrpc.php", "/administrator/index.php"}

count if {
	input.tls.ja4
	input.http.method == "POST"
	lower(input.http.path) in login_paths
	input.http.status in {401, 403}
}

# Only login attempts are slowed: the fingerprint is shared by every client
# built on the same TLS stack, so browsing stays untouched.
mitigate if {
	input.http.method == "POST"
	lower(input.http.path) in login_paths
}

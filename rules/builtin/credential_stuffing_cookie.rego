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

import data.guardd.config

# The login endpoints are the configuration's rules.login_paths (docs/rules.md).
login_path(path) if path in config.login_paths

login_path(path) if strings.any_prefix_match(path, config.login_prefixes)

login_path(path) if strings.any_suffix_match(path, config.login_suffixes)

count if {
	input.http.cookies.session
	input.http.method == "POST"
	login_path(lower(input.http.path))
	input.http.status in {401, 403}
}

mitigate if input.http.cookies.session

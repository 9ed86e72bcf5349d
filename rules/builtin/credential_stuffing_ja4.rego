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

import data.guardd.config

# The login endpoints are the configuration's rules.login_paths (docs/rules.md).
login_path(path) if path in config.login_paths

login_path(path) if strings.any_prefix_match(path, config.login_prefixes)

login_path(path) if strings.any_suffix_match(path, config.login_suffixes)

count if {
	input.tls.ja4
	input.http.method == "POST"
	login_path(lower(input.http.path))
	input.http.status in {401, 403}
}

# Only login attempts are slowed: the fingerprint is shared by every client
# built on the same TLS stack, so browsing stays untouched.
mitigate if {
	input.http.method == "POST"
	login_path(lower(input.http.path))
}

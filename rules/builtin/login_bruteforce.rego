# METADATA
# title: Login brute force
# description: >-
#   Failed logins counted per client address, as sites really answer them: a
#   POST to a login endpoint answered 401 or 403; a POST to WordPress'
#   wp-login.php or xmlrpc.php answered 200 (WordPress re-renders the form on
#   failure and redirects on success); a POST to a login form (not a JSON API)
#   answered 200, the form shown again; a POST to a login endpoint the site
#   does not have (404); a failure answered 302 back to the form, seen as the
#   form fetched again with an error in its query (/login?error=1); and HTTP
#   basic authentication refused (401) with a user name, on any path.
# custom:
#   characteristics: [ip.src]
#   period: 5m
#   requests_per_period: 5
#   windows: [{period: 1h, requests_per_period: 10}]
#   action: block
#   mitigation_timeout: 30m
#   algorithm: sliding_window
package guardd.rules.login_bruteforce

import data.guardd.config

# The login endpoints are the configuration's rules.login_paths (docs/rules.md):
# exact paths, prefixes and ends of paths, lower case.
login_path(path) if path in config.login_paths

login_path(path) if strings.any_prefix_match(path, config.login_prefixes)

login_path(path) if strings.any_suffix_match(path, config.login_suffixes)

count if {
	input.http.method == "POST"
	login_path(lower(input.http.norm.path))
	input.http.status in {401, 403, 404}
}

# A login form shown again: 200 on a login path that is not a JSON API or
# a token endpoint (those answer 200 to a success).
count if {
	input.http.method == "POST"
	login_path(lower(input.http.norm.path))
	input.http.status == 200
	not contains(lower(input.http.norm.path), "/api/")
	not contains(lower(input.http.norm.path), "/oauth/")
	not lower(input.http.norm.path) == "/auth"
}

# A failure redirected back to the form: the POST answers 302 as a success
# does, and the client follows it to the form with an error flag.
count if {
	input.http.query
	input.http.method == "GET"
	some arg in failure_args
	input.http.args[arg]
	login_path(lower(input.http.norm.path))
}

failure_args := {"error", "failed", "login_failed", "login_error", "auth_error", "auth_failed", "loginfailed"}

count if {
	input.http.status == 401
	input.log.remote_user != ""
	input.log.remote_user != "-"
}

mitigate if login_path(lower(input.http.norm.path))

mitigate if input.http.status == 401

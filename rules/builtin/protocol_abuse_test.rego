package guardd.rules.protocol_abuse_test

import data.guardd.rules.protocol_abuse as rule

browser := "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15"

req(method, path, proto, status) := {"http": {"method": method, "path": path, "protocol": proto, "status": status, "user_agent": browser, "headers": {}, "cookies": {}}, "log": {}}

with_ua(method, path, proto, ua) := {"http": {"method": method, "path": path, "protocol": proto, "status": 400, "user_agent": ua, "headers": {}, "cookies": {}}, "log": {}}

no_version(method, path, ua) := {"http": {"method": method, "path": path, "status": 400, "user_agent": ua, "headers": {}, "cookies": {}}, "log": {}}

no_ua(method, path, proto) := {"http": {"method": method, "path": path, "protocol": proto, "status": 400, "headers": {}, "cookies": {}}, "log": {}}

test_garbage_request_line if {
	rule.count with input as {"http": {"status": 400, "headers": {}, "cookies": {}}, "log": {"request": "\u0016\u0003\u0001\u0001"}}
}

test_empty_request_line_is_not_counted if {
	not rule.count with input as {"http": {"status": 400, "headers": {}, "cookies": {}}, "log": {"request": ""}}
}

# A bogus version with a second break trips on one request.
test_bogus_version_and_nameless_client if {
	rule.count with input as with_ua("GET", "/", "HTTP/1.2", "x")
	rule.count with input as with_ua("GET", "/", "HTTP/2.1", "x")
	rule.count with input as no_ua("GET", "/", "HTTP/1.2")
}

test_bogus_version_and_no_target if {
	# "GET HTTP/1.2": the version in the target's place
	rule.count with input as no_version("GET", "HTTP/1.2", browser)
	rule.count with input as no_version("GET", "HTTP/2.1", browser)
	# "GET foo HTTP/1.2"
	rule.count with input as req("GET", "foo", "HTTP/1.2", 400)
}

# One break alone is left to http_version_abuse (repeated) and bad_requests.
test_bogus_version_alone_is_not_counted if {
	not rule.count with input as req("GET", "/", "HTTP/1.2", 400)
	not rule.count with input as req("GET", "/", "HTTP/2.1", 400)
}

test_no_target_with_a_valid_version_is_not_counted if {
	not rule.count with input as no_version("GET", "HTTP/1.0", browser)
	not rule.count with input as no_version("GET", "HTTP/1.1", browser)
	not rule.count with input as no_version("GET", "HTTP/0.9", browser)
	not rule.count with input as no_version("GET", "HTTP/2.0", browser)
	not rule.count with input as no_version("GET", "HTTP/1.1", "x")
}

test_valid_versions if {
	not rule.count with input as req("GET", "/", "HTTP/1.1", 400)
	not rule.count with input as req("GET", "/", "HTTP/0.9", 400)
	not rule.count with input as req("GET", "/", "HTTP/2.0", 200)
	not rule.count with input as with_ua("GET", "/", "HTTP/1.1", "x")
	not rule.count with input as req("OPTIONS", "*", "HTTP/1.1", 200)
}

test_trace_connect_and_proxy_probes if {
	rule.count with input as req("TRACE", "/dashboard/", "HTTP/2.0", 401)
	rule.count with input as req("CONNECT", "foo.example:25", "HTTP/1.1", 400)
	rule.count with input as req("GET", "http://www.example.com:80/ip4.php", "HTTP/1.0", 400)
}

test_webdav_refused if {
	rule.count with input as req("PROPFIND", "/", "HTTP/1.1", 405)
	not rule.count with input as req("PROPFIND", "/remote.php/dav/files/a/", "HTTP/1.1", 207)
}

test_ordinary_requests if {
	not rule.count with input as req("GET", "/", "HTTP/1.1", 200)
	not rule.count with input as req("POST", "/api/v1/items", "HTTP/2.0", 201)
}

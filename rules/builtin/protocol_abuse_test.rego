package guardd.rules.protocol_abuse_test

import data.guardd.rules.protocol_abuse as rule

req(method, path, proto, status) := {"http": {"method": method, "path": path, "protocol": proto, "status": status, "headers": {}, "cookies": {}}, "log": {}}

test_garbage_request_line if {
	rule.count with input as {"http": {"status": 400, "headers": {}, "cookies": {}}, "log": {"request": "\u0016\u0003\u0001\u0001"}}
}

test_empty_request_line_is_not_counted if {
	not rule.count with input as {"http": {"status": 400, "headers": {}, "cookies": {}}, "log": {"request": ""}}
}

test_bogus_versions if {
	rule.count with input as req("GET", "/", "HTTP/1.2", 400)
	rule.count with input as req("GET", "/", "HTTP/2.1", 400)
	not rule.count with input as req("GET", "/", "HTTP/1.1", 400)
	not rule.count with input as req("GET", "/", "HTTP/0.9", 400)
	not rule.count with input as req("GET", "/", "HTTP/2.0", 200)
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

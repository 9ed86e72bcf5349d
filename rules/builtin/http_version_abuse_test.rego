package guardd.rules.http_version_abuse_test

import data.guardd.rules.http_version_abuse as rule

req(path, proto) := {"http": {"method": "GET", "path": path, "protocol": proto, "status": 400, "user_agent": "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0", "headers": {}, "cookies": {}}, "log": {}}

test_bogus_versions_are_counted if {
	rule.count with input as req("/", "HTTP/1.2")
	rule.count with input as req("/", "HTTP/2.1")
}

test_missing_target_is_counted if {
	rule.count with input as {"http": {"method": "GET", "path": "HTTP/1.1", "status": 400, "headers": {}, "cookies": {}}, "log": {}}
}

test_valid_versions_are_not if {
	not rule.count with input as req("/", "HTTP/1.1")
	not rule.count with input as req("/", "HTTP/1.0")
	not rule.count with input as req("/", "HTTP/0.9")
	not rule.count with input as req("/", "HTTP/2.0")
	not rule.count with input as req("/index.html", "HTTP/3")
}

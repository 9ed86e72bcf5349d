# METADATA
# title: Browser user agent over a scripting library's TLS stack
# description: >-
#   The user agent claims a browser while the connection's TLS ClientHello
#   (its JA4, joined from sniffing) is that of curl, Python, Go or another
#   library of the tls.client table, or the browser is Chromium headless
#   announcing itself. No browser does this; a bot does, whatever address it
#   rotates through. Keyed on the address and the JA4, so the real browsers
#   behind the same NAT address, whose JA4 differs, are left alone.
# custom:
#   characteristics: [ip.src, tls.ja4]
#   period: 10m
#   requests_per_period: 0.5
#   action: block
#   mitigation_timeout: 1h
#   algorithm: sliding_window
package guardd.rules.tls_mismatch

# Tokens of browser user agents; every browser's starts with Mozilla/5.0.
browsers := {"Chrome/", "Firefox/", "Safari/", "Edg/", "OPR/"}

claims_browser if {
	startswith(input.http.user_agent, "Mozilla/5.0")
	some b in browsers
	contains(input.http.user_agent, b)
}

count if {
	startswith(input.tls.client, "library/")
	claims_browser
}

# Firefox does not speak with Chromium's TLS stack.
count if {
	startswith(input.tls.client, "browser/chromium")
	contains(input.http.user_agent, "Firefox/")
}

# Headless Chromium has Chrome's TLS stack but says so in its user agent.
count if {
	input.tls.ja4
	contains(input.http.user_agent, "HeadlessChrome")
}

mitigate := true

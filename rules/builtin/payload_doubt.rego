# METADATA
# title: Doubtful payload
# description: >-
#   A payload signature where people also write one, or a lone weak sign: a
#   fragment in a search box's argument (q, s, search, query, keyword ...) or
#   in a query language's (a dashboard's expr, filter, PromQL, Lucene, KQL,
#   Grafana's var-...), which holds "select * from readers" or "<script>
#   tags tutorial" in honest use; an exploit in the referer (another site's
#   URL); script or SQL in the user agent; an SQL probe fragment alone; a
#   query that is not UTF-8, or that has a run of a hundred equal bytes,
#   more than 255 arguments or a 100-byte name; a method no site serves; a
#   bogus HTTP version or none; a backup or key file's extension. A person's
#   browser passes the challenge; anything else asked for (an API call, a
#   download) is only logged. Each trip also adds 4 to the client's anomaly
#   score, below the score's challenge (5) alone: with another weak signal
#   of another rule the score challenges every request, and blocks as
#   signals pile up. Strong signs in other places are exploit_payload's,
#   injection's and sqli_probe's, which block.
# custom:
#   characteristics: [ip.src]
#   period: 10m
#   requests_per_period: 0.5
#   action: challenge
#   challenge_fallback: log
#   anomaly_score: 4
#   mitigation_timeout: 30m
#   algorithm: sliding_window
package guardd.rules.payload_doubt

count if guardd.text_signature(input.http.query, "log4shell|java_injection|php_injection|shellshock|cmdi|rfi|lfi|ssrf_metadata|xss_probe|node_injection|sqli_probe|traversal")

count if guardd.text_injection(input.http.query)

count if guardd.query_signature(input.http.query, "sqli_probe|invalid_utf8|overflow")

count if guardd.signature(input.http.norm.referer, "log4shell|java_injection|shellshock")

count if guardd.signature(input.http.norm.user_agent, "xss_probe|sqli_probe|php_injection|node_injection")

count if guardd.signature(input.http.norm.path, "sqli_probe|xss_probe|node_injection")

# From paranoia level 2 (rules.paranoia), any payload class in the referer,
# and command injection in the path and the user agent's other classes.
count if {
	data.guardd.config.paranoia >= 2
	guardd.signature(input.http.norm.referer, "php_injection|cmdi|rfi|lfi|ssrf_metadata|xss_probe|node_injection|sqli_probe")
}

count if {
	data.guardd.config.paranoia >= 2
	guardd.signature(input.http.norm.path, "cmdi|traversal")
}

count if {
	data.guardd.config.paranoia >= 2
	guardd.signature(input.http.norm.user_agent, "cmdi|rfi|lfi|ssrf_metadata")
}

# Methods of HTTP, WebDAV, CalDAV and UPnP's discovery that sites serve or
# refuse; another (FOO, TEST, a 22-letter word) is a probe of the server.
methods := {
	"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT", "PROPFIND",
	"PROPPATCH", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK", "SEARCH", "REPORT", "MKCALENDAR",
	"ACL", "PURGE", "M-SEARCH", "NOTIFY", "BIND", "UNBIND", "REBIND", "MERGE", "CHECKOUT",
	"CHECKIN", "VERSION-CONTROL", "UPDATE", "LABEL", "MKWORKSPACE", "MKACTIVITY", "BASELINE-CONTROL",
	"PRI", "QUERY", "PUB", "SUB",
}

count if {
	input.http.method
	not input.http.method in methods
}

# A version HTTP never had (HTTP/4.0, HTTP/1.1.1, FOO/1.0). A near miss
# (HTTP/1.2) is a client's bug more often than a probe: http_version_abuse
# wants it repeated.
count if {
	input.http.protocol
	not strings.any_prefix_match(input.http.protocol, {"HTTP/0.9", "HTTP/1.", "HTTP/2", "HTTP/3"})
}

count if {
	strings.any_prefix_match(input.http.protocol, {"HTTP/1.", "HTTP/2", "HTTP/3"})
	not strings.any_suffix_match(input.http.protocol, {"/1.0", "/1.1", "/1.2", "/1.3", "/1.4", "/1.5", "/1.6", "/1.7", "/1.8", "/1.9", "/2", "/2.0", "/3", "/3.0"})
}

# "GET /" in an access log: an HTTP/0.9 request line, which no client of
# this century sends. (Other sources may not carry the version.)
count if {
	input.source == "nginx_log"
	input.http.method
	startswith(input.http.path, "/")
	not input.http.protocol
}

# A session id in the query: a link made to fix a victim's session.
count if contains(lower(input.http.query), "jsessionid=")

count if contains(lower(input.http.query), "phpsessid=")

count if strings.any_suffix_match(lower(input.http.norm.path), {
	".bak", ".old", ".orig", ".save", ".swp", ".swo", ".tmp", ".backup", "~", ".db", ".rdb",
	".pem", ".key", ".p12", ".pfx", ".jks", ".kdbx", ".ovpn",
})

mitigate := true

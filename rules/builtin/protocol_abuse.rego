# METADATA
# title: Protocol abuse
# description: >-
#   A request no browser or HTTP library sends to a web site: a request line
#   that is not HTTP (TLS or RDP bytes on a plain-text port, a RAT's
#   handshake), a bogus HTTP version, TRACE, TRACK or DEBUG, CONNECT or an
#   absolute URI (open-proxy probing), or a WebDAV method the site refuses.
#   One request is enough. An empty request line (a connection closed before
#   it sent anything, as browsers' speculative connections are) is not
#   counted here.
# custom:
#   characteristics: [ip.src]
#   period: 10m
#   requests_per_period: 0.5
#   action: block
#   mitigation_timeout: 1h
#   algorithm: sliding_window
package guardd.rules.protocol_abuse

versions := {"HTTP/0.9", "HTTP/1.0", "HTTP/1.1", "HTTP/2", "HTTP/2.0", "HTTP/3", "HTTP/3.0"}

webdav := {"PROPFIND", "PROPPATCH", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK", "SEARCH"}

count if {
	not input.http.method
	input.log.request != ""
}

count if {
	input.http.protocol
	not input.http.protocol in versions
}

# Methods as sent: servers answer lower-case methods 400, which bad_requests counts.
count if input.http.method in {"TRACE", "TRACK", "DEBUG", "CONNECT"}

count if strings.any_prefix_match(input.http.path, {"http://", "https://", "HTTP://", "HTTPS://"})

count if {
	input.http.method in webdav
	input.http.status in {405, 501}
}

mitigate := true

# METADATA
# title: Protocol abuse
# description: >-
#   A request no browser or HTTP library sends to a web site: a request line
#   that is not HTTP (TLS or RDP bytes on a plain-text port, a RAT's
#   handshake), TRACE, TRACK or DEBUG, CONNECT or an absolute URI
#   (open-proxy probing), a WebDAV method the site refuses, or a bogus HTTP
#   version together with a second, independent break: no request target, or
#   a user agent that names no product. One request is enough. A bogus
#   version alone is left to http_version_abuse, which wants it repeated; an
#   empty request line (a connection closed before it sent anything, as
#   browsers' speculative connections are) is left to bad_requests.
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

# A bogus version and a second, independent sign that no HTTP client made the
# request. One of them alone is a client bug more often than an attack.
count if {
	bogus_version
	nameless_client
}

count if {
	bogus_version
	no_target
}

# "GET HTTP/1.2": the version stands where the target should, and is bogus.
count if {
	not startswith(input.http.path, "/")
	startswith(input.http.path, "HTTP/")
	not input.http.path in versions
}

bogus_version if {
	input.http.protocol
	not input.http.protocol in versions
}

# A request line whose target is neither a path, "*" nor an absolute URI
# (those are counted above).
no_target if {
	input.http.path
	not startswith(input.http.path, "/")
	input.http.path != "*"
	not strings.any_prefix_match(input.http.path, {"http://", "https://", "HTTP://", "HTTPS://"})
}

# Browsers, HTTP libraries and crawlers all send "product/version".
nameless_client if not input.http.user_agent

nameless_client if not contains(input.http.user_agent, "/")

# Methods as sent: servers answer lower-case methods 400, which bad_requests counts.
count if input.http.method in {"TRACE", "TRACK", "DEBUG", "CONNECT"}

count if strings.any_prefix_match(input.http.path, {"http://", "https://", "HTTP://", "HTTPS://"})

count if {
	input.http.method in webdav
	input.http.status in {405, 501}
}

mitigate := true

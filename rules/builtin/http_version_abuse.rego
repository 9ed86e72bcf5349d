# METADATA
# title: Repeated bogus HTTP versions
# description: >-
#   Requests whose line is well formed but names an HTTP version no client
#   speaks (HTTP/1.2, HTTP/2.1), or whose target is missing, counted per
#   client address. One such request is as likely a broken client or a
#   proxy's mangling as a probe, so it takes several: a fuzzer or a
#   denial-of-service tool sends them in a row. A bogus version with a second
#   break in the same request is protocol_abuse's, at once.
# custom:
#   characteristics: [ip.src]
#   period: 10m
#   requests_per_period: 2
#   action: block
#   mitigation_timeout: 1h
#   algorithm: sliding_window
package guardd.rules.http_version_abuse

versions := {"HTTP/0.9", "HTTP/1.0", "HTTP/1.1", "HTTP/2", "HTTP/2.0", "HTTP/3", "HTTP/3.0"}

count if {
	input.http.protocol
	not input.http.protocol in versions
}

# "GET HTTP/1.1": the version stands where the target should.
count if {
	not startswith(input.http.path, "/")
	input.http.path in versions
}

mitigate := true

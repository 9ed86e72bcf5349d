# METADATA
# title: Repeated bad requests
# description: >-
#   Requests answered 400 (malformed, or closed before a request line),
#   counted per client address. A browser's speculative connections make one
#   now and then; a prober makes them in a row.
# custom:
#   characteristics: [ip.src]
#   period: 10m
#   requests_per_period: 4
#   action: block
#   mitigation_timeout: 30m
#   algorithm: sliding_window
package guardd.rules.bad_requests

count if input.http.status == 400

mitigate := true

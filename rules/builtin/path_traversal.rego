# METADATA
# title: Path traversal and local file inclusion
# description: >-
#   A path with a ".." segment (once percent-decoded, twice-encoded, overlong
#   UTF-8 or backslashed: browsers resolve these before sending), or a query
#   that climbs two directories. One request is enough.
# custom:
#   characteristics: [ip.src]
#   period: 10m
#   requests_per_period: 0.5
#   action: block
#   mitigation_timeout: 1h
#   algorithm: sliding_window
package guardd.rules.path_traversal

count if input.http.anomalies.traversal

count if input.http.anomalies.overlong_utf8

count if guardd.query_signature(input.http.query, "traversal")

mitigate := true

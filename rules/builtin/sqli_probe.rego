# METADATA
# title: SQL injection probing
# description: >-
#   Query strings holding fragments of SQL injection probes (union select,
#   information_schema, sleep(), ' or '...) that libinjection does not read as
#   a complete injection, counted per client address, in arguments other than
#   a search box's or a query language's. One such query may be a person
#   reading about databases (payload_doubt challenges it); three in ten
#   minutes are a probe.
# custom:
#   characteristics: [ip.src]
#   period: 10m
#   requests_per_period: 2
#   action: block
#   mitigation_timeout: 30m
#   algorithm: sliding_window
package guardd.rules.sqli_probe

count if guardd.query_signature(input.http.query, "sqli_probe")

mitigate := true

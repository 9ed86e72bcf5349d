# METADATA
# title: SQL injection and XSS
# description: >-
#   A query argument that libinjection reads as SQL injection or cross-site
#   scripting, or a path that holds a script. libinjection parses the value
#   as SQL and HTML rather than looking for words, so a search for "select
#   dining chairs" or "union station" is not flagged; values without a quote,
#   a parenthesis or '<' are not even parsed.
# custom:
#   characteristics: [ip.src]
#   period: 10m
#   requests_per_period: 0.5
#   action: block
#   mitigation_timeout: 30m
#   algorithm: sliding_window
package guardd.rules.injection

count if guardd.query_sqli(input.http.query)

count if guardd.query_xss(input.http.query)

count if guardd.xss(input.http.norm.path)

mitigate := true

# METADATA
# title: Requests with few headers
# custom:
#   characteristics: [ip.src.prefix]
#   period: 10m
#   requests_per_period: 500
#   action: log
package guardd.rules.header_count

# object.get with a default is not compiled natively: this rule is
# evaluated by OPA (a fallback), which `guardd rules check` reports.
count if object.get(input.http.headers, "accept-language", "") == ""

# want: distinct_unknown.bad.rego:9: metadata distinct: unknown characteristic "http.pathh"

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   distinct: http.pathh
#   action: log
package guardd.rules.distinct_unknown

count if input.http.status == 404

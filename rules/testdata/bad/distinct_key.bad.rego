# want: distinct_key.bad.rego:9: metadata distinct: ip.src is also in characteristics

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   distinct: ip.src
#   action: log
package guardd.rules.distinct_key

count if input.http.status == 404

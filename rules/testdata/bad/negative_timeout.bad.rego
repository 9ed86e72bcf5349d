# want: negative_timeout.bad.rego:10: metadata mitigation_timeout: "-5m" is not a positive Go duration

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: block
#   mitigation_timeout: -5m
package guardd.rules.negative_timeout

count if input.http.status == 404

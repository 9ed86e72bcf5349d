# want: unknown_key.bad.rego:10: unknown metadata key "threshold"; accepted: characteristics, period, requests_per_period, action, mitigation_timeout, algorithm, score

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: block
#   threshold: 5
package guardd.rules.unknown_key

count if input.http.status == 404

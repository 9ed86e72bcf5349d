# want: no_count.bad.rego:10: rule no_count has no count rule

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: block
package guardd.rules.no_count

mitigate if input.http.status == 404

# want: empty_characteristics.bad.rego:6: metadata characteristics: empty

# METADATA
# title: x
# custom:
#   characteristics: []
#   period: 1m
#   requests_per_period: 10
#   action: block
package guardd.rules.empty_characteristics

count if input.http.status == 404

# want: count_number.bad.rego:12: count has type number; want boolean

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: block
package guardd.rules.count_number

count := 5

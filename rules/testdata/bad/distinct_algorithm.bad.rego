# want: distinct_algorithm.bad.rego:10: metadata distinct: distinct values are counted in a sliding window

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   algorithm: gcra
#   distinct: http.path
#   action: log
package guardd.rules.distinct_algorithm

count if input.http.status == 404

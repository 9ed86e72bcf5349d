# want: bad_algorithm.bad.rego:10: metadata algorithm: unexpected value leaky_bucket; accepted: sliding_window, fixed_window, sliding_log, token_bucket, gcra

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: block
#   algorithm: leaky_bucket
package guardd.rules.bad_algorithm

count if input.http.status == 404

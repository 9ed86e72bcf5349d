# want: bad_on_store_error.bad.rego:10: metadata on_store_error: unexpected value shut; accepted: local, open, closed

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: block
#   on_store_error: shut
package guardd.rules.bad_on_store_error

count if input.http.status == 404

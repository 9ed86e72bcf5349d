# want: zero_requests.bad.rego:8: metadata requests_per_period: got 0; want a number > 0

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 0
#   action: block
package guardd.rules.zero_requests

count if input.http.status == 404

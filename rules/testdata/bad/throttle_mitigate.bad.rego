# want: throttle_mitigate.bad.rego:14: a throttle rule refuses the requests its count expression counts; mitigate has no meaning for it

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: throttle
package guardd.rules.throttle_mitigate

count if input.http.path == "/api"

mitigate if input.http.path == "/"

# want: throttle_timeout.bad.rego:10: metadata mitigation_timeout: has no meaning for action throttle

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: throttle
#   mitigation_timeout: 5m
package guardd.rules.throttle_timeout

count if input.http.path == "/api"

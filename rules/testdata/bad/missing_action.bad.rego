# want: missing_action.bad.rego:3: metadata action: missing; accepted: log, block, rate_limit, shadowban, firewall, throttle

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
package guardd.rules.missing_action

count if input.http.status == 404

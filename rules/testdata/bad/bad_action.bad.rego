# want: bad_action.bad.rego:9: metadata action: unexpected value ban; accepted: log, block, rate_limit, shadowban, firewall, throttle

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: ban
package guardd.rules.bad_action

count if input.http.status == 404

# want: time_now.bad.rego:12: built-in time.now_ns is not allowed in rules

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: block
package guardd.rules.time_now

count if time.now_ns() > input.time

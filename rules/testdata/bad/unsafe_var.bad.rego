# want: unsafe_var.bad.rego:12: var x is unsafe

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: block
package guardd.rules.unsafe_var

count if x == 404

# want: opa_runtime.bad.rego:12: built-in opa.runtime is not allowed in rules

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: block
package guardd.rules.opa_runtime

count if opa.runtime().env.HOME == "/root"

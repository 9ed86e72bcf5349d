# want: shadow_block.bad.rego:10: metadata shadow: applies to action throttle; to watch a detection rule without enforcing it, use action: log

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: block
#   shadow: true
package guardd.rules.shadow_block

count if input.http.path == "/api"

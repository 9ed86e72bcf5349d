# want: challenge_block.bad.rego:10: metadata challenge_fallback: applies to action challenge

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: block
#   challenge_fallback: block
package guardd.rules.challenge_block

count if input.http.path == "/api"

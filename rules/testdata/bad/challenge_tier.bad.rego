# want: challenge_tier.bad.rego:10: metadata challenge_tier: unknown challenge tier "captcha"; expect 'pow' or 'cookie'

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: challenge
#   challenge_tier: captcha
package guardd.rules.challenge_tier

count if input.http.path == "/api"

# want: challenge_fallback.bad.rego:10: metadata challenge_fallback: unexpected value shadowban; accepted: rate_limit, block, log

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: challenge
#   challenge_fallback: shadowban
package guardd.rules.challenge_fallback

count if input.http.path == "/api"

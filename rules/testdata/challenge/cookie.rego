# METADATA
# title: Challenge by cookie, blocking what cannot see a page
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: challenge
#   challenge_tier: cookie
#   challenge_difficulty: 12
#   challenge_fallback: block
package guardd.rules.challenge_cookie

count if input.http.path == "/search"

# want: challenge_difficulty.bad.rego:10: metadata challenge_difficulty: 40: want a whole number of leading zero bits from 1 to 28

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: challenge
#   challenge_difficulty: 40
package guardd.rules.challenge_difficulty

count if input.http.path == "/api"

# METADATA
# title: Challenge with the defaults
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: challenge
package guardd.rules.challenge_default

count if input.http.path == "/search"

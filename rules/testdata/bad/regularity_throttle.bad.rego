# want: regularity_throttle.bad.rego:9: metadata regularity: not for action throttle

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 10m
#   requests_per_period: 20
#   regularity: {min_events: 20, max_cv: 0.2}
#   action: throttle
package guardd.rules.regularity_throttle

count if input.http.method == "GET"

# want: regularity_key.bad.rego:9: metadata regularity: unknown key "cv"; accepted: min_events, max_cv

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 10m
#   requests_per_period: 20
#   regularity: {min_events: 20, cv: 0.2}
#   action: log
package guardd.rules.regularity_key

count if input.http.method == "GET"

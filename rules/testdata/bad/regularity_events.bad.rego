# want: regularity_events.bad.rego:9: metadata regularity: min_events 100; want a whole number of events from 3 to 33

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 10m
#   requests_per_period: 20
#   regularity:
#     min_events: 100
#     max_cv: 0.2
#   action: log
package guardd.rules.regularity_events

count if input.http.method == "GET"

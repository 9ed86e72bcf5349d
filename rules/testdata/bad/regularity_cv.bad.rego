# want: regularity_cv.bad.rego:9: metadata regularity: max_cv 1.5; want a coefficient of variation > 0 and <= 1

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 10m
#   requests_per_period: 20
#   regularity: {min_events: 20, max_cv: 1.5}
#   action: log
package guardd.rules.regularity_cv

count if input.http.method == "GET"

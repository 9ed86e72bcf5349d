# want: score_not_numeric.bad.rego:10: metadata score: http.path is not numeric

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: log
#   score: http.path
package guardd.rules.score_not_numeric

count if input.http.status == 404

# want: anomaly_score_name.bad.rego:10: package name anomaly_score is reserved

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: log
package guardd.rules.anomaly_score

count if input.http.path == "/api"

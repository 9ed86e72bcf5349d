# want: anomaly_score_key.bad.rego:10: metadata anomaly_score: the score is the client's: the rule's characteristics must include ip.src

# METADATA
# title: x
# custom:
#   characteristics: [http.user_agent]
#   period: 1m
#   requests_per_period: 10
#   action: log
#   anomaly_score: 3
package guardd.rules.anomaly_score_key

count if input.http.path == "/api"

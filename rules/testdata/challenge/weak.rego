# METADATA
# title: A weak signal that adds to the client's score
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 1
#   action: log
#   anomaly_score: 2.5
package guardd.rules.weak_signal

count if input.http.path == "/search"

# METADATA
# title: Distinct paths per address
# custom:
#   characteristics: [ip.src]
#   distinct: http.path
#   period: 1m
#   requests_per_period: 50
#   windows: [{period: 1h, requests_per_period: 500}]
#   action: log
package guardd.rules.distinct_paths

count if input.http.status == 404

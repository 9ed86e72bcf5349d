# METADATA
# title: API requests per client
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 100
#   action: throttle
#   algorithm: gcra
#   burst: 20
#   retry_jitter: 2s
#   shadow: true
package guardd.rules.api_throttle

count if startswith(input.http.path, "/api/")

# want: burst_window.bad.rego:10: metadata burst: applies to algorithm token_bucket or gcra, not sliding_window

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: throttle
#   burst: 5
package guardd.rules.burst_window

count if input.http.path == "/api"

# want: concurrency_period.bad.rego:10: metadata concurrency: a concurrency limit takes no period or requests_per_period

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: throttle
#   concurrency: 5
package guardd.rules.concurrency_period

count if input.http.path == "/api"

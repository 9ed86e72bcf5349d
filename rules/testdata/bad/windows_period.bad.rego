# want: windows_period.bad.rego:9: metadata windows: element 2: period 1 hour is not a positive Go duration

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   windows: [{period: 1h, requests_per_period: 5}, {period: 1 hour, requests_per_period: 5}]
#   action: log
package guardd.rules.windows_period

count if input.http.status == 404

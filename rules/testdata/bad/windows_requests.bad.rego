# want: windows_requests.bad.rego:7: metadata windows: element 1: requests_per_period 0; want a number > 0

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   windows:
#     - period: 1h
#       requests_per_period: 0
#   action: log
package guardd.rules.windows_requests

count if input.http.status == 404

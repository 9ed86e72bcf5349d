# want: bad_period.bad.rego:7: metadata period: got 60; want a Go duration with a unit

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 60
#   requests_per_period: 10
#   action: block
package guardd.rules.bad_period

count if input.http.status == 404

# want: syntax.bad.rego:12: unexpected equal token

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: block
package guardd.rules.syntax

count if input.http.status == == 404

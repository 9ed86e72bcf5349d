# want: wrong_package.bad.rego:10: package acme.rules.probe: want guardd.rules.<name>

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: block
package acme.rules.probe

count if input.http.status == 404

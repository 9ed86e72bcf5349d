# want: unknown_characteristic.bad.rego:6: metadata characteristics: unknown characteristic "ip.source"; accepted: ip.src,

# METADATA
# title: x
# custom:
#   characteristics: [ip.source]
#   period: 1m
#   requests_per_period: 10
#   action: block
package guardd.rules.unknown_characteristic

count if input.http.status == 404

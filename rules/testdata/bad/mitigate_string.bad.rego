# want: mitigate_string.bad.rego:14: mitigate has type any; want boolean

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: block
package guardd.rules.mitigate_string

count if input.http.status == 404

mitigate := input.http.path

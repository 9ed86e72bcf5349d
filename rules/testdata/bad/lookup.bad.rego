# want: lookup.bad.rego:12: built-in net.lookup_ip_addr is not allowed in rules

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: block
package guardd.rules.lookup

count if "127.0.0.1" in net.lookup_ip_addr("localhost")

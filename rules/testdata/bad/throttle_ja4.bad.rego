# want: throttle_ja4.bad.rego:6: action throttle decides when a request arrives, but characteristic tls.ja4 is not known when a request arrives

# METADATA
# title: x
# custom:
#   characteristics: [tls.ja4]
#   period: 1m
#   requests_per_period: 10
#   action: throttle
package guardd.rules.throttle_ja4

count if input.http.path == "/api"

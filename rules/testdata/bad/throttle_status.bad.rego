# want: throttle_status.bad.rego:14: action throttle decides when a request arrives, but input.http.status is not known when a request arrives

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: throttle
package guardd.rules.throttle_status

count if {
	input.http.path == "/api"
	input.http.status == 200
}

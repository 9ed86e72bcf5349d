# METADATA
# title: Slow upstream per API key
# description: Sums upstream time per API key, to shed clients that make the backend work hardest.
# custom:
#   characteristics:
#     - http.headers["x-api-key"]
#   period: 1m
#   requests_per_period: 30
#   action: rate_limit
#   mitigation_timeout: 5m
#   algorithm: token_bucket
#   score: http.request_time
package guardd.rules.slow_upstream

count if {
	input.http.headers["x-api-key"]
	startswith(input.http.path, "/api/")
	not net.cidr_contains("10.0.0.0/8", input.ip.src)
}

# METADATA
# title: Failed logins, burst and low-and-slow
# custom:
#   characteristics: [ip.src]
#   windows:
#     - period: 5m
#       requests_per_period: 20
#     - period: 1h
#       requests_per_period: 10
#   action: block
package guardd.rules.low_and_slow

count if {
	input.http.path == "/login"
	input.http.status == 401
}

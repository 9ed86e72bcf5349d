# METADATA
# title: WordPress user enumeration
# description: >-
#   Requests that walk WordPress author archives (?author=N, which redirect
#   to /author/<login>/) or its users API, counted per client address by the
#   number of distinct authors asked for. A reader follows the link of one or
#   two authors; an enumerator asks for 1, 2, 3, ... in a row.
# custom:
#   characteristics: [ip.src]
#   distinct: http.args["author"]
#   period: 10m
#   requests_per_period: 4
#   action: block
#   mitigation_timeout: 1h
#   algorithm: sliding_window
package guardd.rules.wordpress_user_enum

count if {
	input.http.args.author
	input.http.method in {"GET", "HEAD"}
}

mitigate := true

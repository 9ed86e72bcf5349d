# want: distinct_list.bad.rego:9: metadata distinct: got [http.path http.user_agent]; want one characteristic

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   distinct: [http.path, http.user_agent]
#   action: log
package guardd.rules.distinct_list

count if input.http.status == 404

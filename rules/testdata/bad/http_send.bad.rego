# want: http_send.bad.rego:13: built-in http.send is not allowed in rules

# METADATA
# title: x
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: block
package guardd.rules.http_send

count if {
	resp := http.send({"method": "GET", "url": "http://127.0.0.1/"})
	resp.status_code == 200
}

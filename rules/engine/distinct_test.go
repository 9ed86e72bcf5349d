package engine_test

import (
	"fmt"
	"testing"
	"time"
)

const distinctRule = `# METADATA
# title: many distinct missing pages
# custom:
#   characteristics: [ip.src]
#   distinct: http.path
#   period: 1m
#   requests_per_period: 5
#   action: block
package guardd.rules.distinct404

count if input.http.status == 404

mitigate := true
`

const slowRule = `# METADATA
# title: failed logins, burst or slow
# custom:
#   characteristics: [ip.src]
#   windows:
#     - period: 5m
#       requests_per_period: 20
#     - period: 1h
#       requests_per_period: 10
#   action: block
package guardd.rules.slowlogin

count if {
	input.http.path == "/login"
	input.http.status == 401
}
`

// TestDistinctRule: one missing page asked for again and again is a broken
// link; six different ones in a minute trip the rule.
func TestDistinctRule(t *testing.T) {
	e := newEngine(t, distinctRule)
	a, b := "203.0.113.7", "198.51.100.1"
	var reqs []req
	for i := range 30 { // the same path 30 times: one distinct value
		reqs = append(reqs, req{time.Duration(i) * time.Second, b, "GET", "/missing.png", 404, 0, false})
	}
	for i := range 6 {
		reqs = append(reqs, req{time.Duration(i) * time.Second, a, "GET", fmt.Sprintf("/p%d", i), 404, 0, i == 5})
	}
	reqs = append(reqs, req{10 * time.Second, a, "GET", "/", 200, 0, false}) // not counted: no trip
	feed(t, e, reqs)
}

// TestWindowsRule: ten failed logins spread over an hour trip as surely as
// twenty in five minutes.
func TestWindowsRule(t *testing.T) {
	e := newEngine(t, slowRule)
	slow, slower := "203.0.113.8", "203.0.113.9"
	var reqs []req
	for i := range 11 {
		reqs = append(reqs, req{time.Duration(i) * 5 * time.Minute, slow, "POST", "/login", 401, 0, i == 10})
	}
	feed(t, e, reqs)
	e = newEngine(t, slowRule)
	reqs = reqs[:0]
	for i := range 11 { // one every 7 minutes: under 10 in any hour
		reqs = append(reqs, req{time.Duration(i) * 7 * time.Minute, slower, "POST", "/login", 401, 0, false})
	}
	feed(t, e, reqs)
}

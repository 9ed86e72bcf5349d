package engine_test

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/rules/engine"
)

const regularRule = `# METADATA
# title: pages at machine-regular intervals
# custom:
#   characteristics: [ip.src]
#   distinct: http.path
#   period: 10m
#   requests_per_period: 10
#   regularity: {min_events: 12, max_cv: 0.2}
#   action: block
package guardd.rules.regular_pages

count if input.http.method == "GET"
`

// TestRegularityRule: a script fetching a new page every 3 s trips the
// rule once it is over the limit and has 12 regular intervals; a person
// fetching as many pages at human intervals, and a monitor polling one
// page every 3 s, never do.
func TestRegularityRule(t *testing.T) {
	e := newEngine(t, regularRule)
	rng := rand.New(rand.NewPCG(3, 4))
	var reqs []req
	at := time.Duration(0)
	for i := range 30 { // a script
		reqs = append(reqs, req{time.Duration(i) * 3 * time.Second, "203.0.113.7", "GET", fmt.Sprintf("/p/%d", i), 200, 0, i >= 11})
	}
	for i := range 30 { // a person: 2 to 60 s between pages
		reqs = append(reqs, req{at, "198.51.100.1", "GET", fmt.Sprintf("/p/%d", i), 200, 0, false})
		at += time.Duration(2+rng.IntN(59)) * time.Second
	}
	for i := range 100 { // a monitor: regular, one page
		reqs = append(reqs, req{time.Duration(i) * 3 * time.Second, "198.51.100.2", "GET", "/health", 200, 0, false})
	}
	sortReqs(reqs)
	feed(t, e, reqs)
	if tm, ok := e.Timing(0, keyOf(t, e, "203.0.113.7"), t0.Add(90*time.Second)); !ok || tm.CV != 0 || tm.Mean != 3*time.Second {
		t.Errorf("script timing %+v %v", tm, ok)
	}
}

// TestRegularityRuleLate: events of a key out of order are left out of its
// timing, not taken as negative intervals, and equal times are a burst.
func TestRegularityRuleLate(t *testing.T) {
	e := newEngine(t, regularRule)
	var reqs []req
	for i := range 20 { // every 3 s, then a late one at 5 s
		reqs = append(reqs, req{time.Duration(i) * 3 * time.Second, "203.0.113.7", "GET", fmt.Sprintf("/p/%d", i), 200, 0, i >= 11})
	}
	reqs = append(reqs, req{5 * time.Second, "203.0.113.7", "GET", "/late", 200, 0, true})
	feed(t, e, reqs)
	e = newEngine(t, regularRule)
	reqs = reqs[:0]
	for i := range 40 { // two pages at each instant: a burst every 3 s
		reqs = append(reqs, req{time.Duration(i/2) * 3 * time.Second, "203.0.113.8", "GET", fmt.Sprintf("/p/%d", i), 200, 0, false})
	}
	feed(t, e, reqs)
}

func sortReqs(r []req) {
	for i := 1; i < len(r); i++ {
		for j := i; j > 0 && r[j].at < r[j-1].at; j-- {
			r[j], r[j-1] = r[j-1], r[j]
		}
	}
}

func keyOf(t *testing.T, e *engine.Engine, ip string) uint64 {
	t.Helper()
	ev := characteristics.Event{IP: netip.MustParseAddr(ip)}
	k, _, ok := e.Key(0, &ev, nil)
	if !ok {
		t.Fatal("no key")
	}
	return k
}

// TestRegularityApplyAllocs: a rule with a timing gate counts without
// allocating.
func TestRegularityApplyAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	e := newEngine(t, regularRule)
	ev := characteristics.Event{IP: netip.MustParseAddr("203.0.113.7"), Method: "GET", Path: "/p", Status: 200}
	var m engine.Matches
	trips := make([]engine.Trip, 0, 4)
	i := 0
	op := func() {
		i++
		ev.Time = t0.Add(time.Duration(i) * time.Second)
		ev.IP = netip.AddrFrom4([4]byte{203, 0, 113, byte(i % 50)})
		m.Reset()
		e.Prepare(&ev, &m)
		trips = e.Apply(ev.Time, m.Items, m.Keys, trips[:0])
	}
	for range 2000 {
		op()
	}
	if n := testing.AllocsPerRun(1000, op); n != 0 {
		t.Errorf("%v allocs per event, want 0", n)
	}
}

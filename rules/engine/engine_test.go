package engine_test

import (
	"net/netip"
	"slices"
	"testing"
	"testing/fstest"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/rules"
	"github.com/guardd/guardd/rules/engine"
)

const loginRule = `# METADATA
# title: test login
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 3
#   action: block
#   mitigation_timeout: 10m
package guardd.rules.login

count if {
	input.http.method == "POST"
	input.http.path == "/login"
	input.http.status == 401
}

mitigate if input.http.path != "/health"
`

const scoreRule = `# METADATA
# title: slow requests
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 2
#   action: rate_limit
#   mitigation_timeout: 1m
#   score: http.request_time
package guardd.rules.slow

count if input.http.path == "/report"
`

func newEngine(t *testing.T, mods ...string) *engine.Engine {
	t.Helper()
	fsys := fstest.MapFS{}
	for i, m := range mods {
		fsys[string(rune('a'+i))+".rego"] = &fstest.MapFile{Data: []byte(m)}
	}
	set, err := rules.Load(fsys, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.Config{Rules: set})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

type req struct {
	at     time.Duration
	ip     string
	method string
	path   string
	status int
	rt     float64
	trip   bool // the request takes a rule over its limit
}

var t0 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

func feed(t *testing.T, e *engine.Engine, reqs []req) []engine.Trip {
	t.Helper()
	var (
		m   engine.Matches
		all []engine.Trip
	)
	for i, r := range reqs {
		ev := characteristics.Event{Time: t0.Add(r.at), IP: netip.MustParseAddr(r.ip), Method: r.method, Path: r.path, Status: r.status, RequestTime: r.rt}
		m.Reset()
		e.Prepare(&ev, &m)
		trips := e.Apply(ev.Time, m.Items, m.Keys, nil)
		if got := len(trips) > 0; got != r.trip {
			t.Errorf("request %d (%+v): tripped = %v, want %v", i, r, got, r.trip)
		}
		for _, tr := range trips {
			sc := tr.Scope() // KeyBytes alias m
			tr.KeyBytes = nil
			if len(sc) != 1 || sc[0].Value != r.ip {
				t.Errorf("request %d: scope %v", i, sc)
			}
			all = append(all, tr)
		}
	}
	return all
}

func TestTripEveryEventOverLimit(t *testing.T) {
	e := newEngine(t, loginRule)
	bad, other := "203.0.113.7", "198.51.100.1"
	trips := feed(t, e, []req{
		{0, bad, "POST", "/login", 401, 0, false},
		{time.Second, bad, "POST", "/login", 401, 0, false},
		{2 * time.Second, bad, "POST", "/login", 401, 0, false},
		// The fourth failure in a minute goes over 3, and so does the fifth.
		{3 * time.Second, bad, "POST", "/login", 401, 0, true},
		{4 * time.Second, bad, "POST", "/login", 401, 0, true},
		{5 * time.Second, bad, "GET", "/account", 200, 0, false},  // not counted
		{6 * time.Second, other, "POST", "/login", 401, 0, false}, // another client
		{3 * time.Minute, bad, "POST", "/login", 401, 0, false},   // the window has passed
	})
	if len(trips) != 2 || trips[0].Rule.Name != "login" || !trips[0].Mitigate ||
		!trips[0].Expires.Equal(t0.Add(3*time.Second+10*time.Minute)) || !trips[1].Time.Equal(t0.Add(4*time.Second)) {
		t.Fatalf("trips = %+v", trips)
	}
}

func TestScore(t *testing.T) {
	e := newEngine(t, scoreRule)
	feed(t, e, []req{
		{0, "203.0.113.9", "GET", "/report", 200, 0.9, false},
		{time.Second, "203.0.113.9", "GET", "/report", 200, 0.9, false},
		{2 * time.Second, "203.0.113.9", "GET", "/report", 200, 0.5, true}, // 2.3s of request time > 2
	})
}

func TestUnkeyableEventSkipped(t *testing.T) {
	e := newEngine(t, loginRule)
	var m engine.Matches
	ev := characteristics.Event{Time: t0, Method: "POST", Path: "/login", Status: 401} // no address
	if n := e.Prepare(&ev, &m); n != 0 {
		t.Fatalf("Prepare returned %d matches for an event without ip.src", n)
	}
}

func TestPrepareAllocs(t *testing.T) {
	e := newEngine(t, loginRule, scoreRule)
	var m engine.Matches
	ev := characteristics.Event{Time: t0, IP: netip.MustParseAddr("203.0.113.7"), Method: "POST", Path: "/login", Status: 401}
	e.Prepare(&ev, &m)
	if n := testing.AllocsPerRun(200, func() {
		m.Reset()
		e.Prepare(&ev, &m)
	}); n != 0 {
		t.Errorf("Prepare allocates %v times per event", n)
	}
}

func TestApplyAllocs(t *testing.T) {
	e := newEngine(t, loginRule, scoreRule)
	var m engine.Matches
	ev := characteristics.Event{Time: t0, IP: netip.MustParseAddr("203.0.113.7"), Method: "POST", Path: "/login", Status: 401}
	e.Prepare(&ev, &m)
	trips := e.Apply(ev.Time, m.Items, m.Keys, nil)
	if n := testing.AllocsPerRun(200, func() {
		trips = e.Apply(ev.Time, m.Items, m.Keys, trips[:0])
	}); n != 0 {
		t.Errorf("Apply allocates %v times per event", n)
	}
}

func TestOnCount(t *testing.T) {
	e := newEngine(t, loginRule)
	type step struct {
		scope    string
		count    float64
		exceeded bool
	}
	var got []step
	e.SetOnCount(func(c engine.Counted) {
		sc := engine.ScopeOf(e.Rules()[c.Rule], c.Values)
		got = append(got, step{sc[0].Name + "=" + sc[0].Value, c.Result.Count, c.Result.Exceeded})
	})
	feed(t, e, []req{
		{at: 0, ip: "203.0.113.7", method: "POST", path: "/login", status: 401},
		{at: time.Second, ip: "203.0.113.7", method: "GET", path: "/", status: 200}, // not counted
		{at: 2 * time.Second, ip: "203.0.113.7", method: "POST", path: "/login", status: 401},
		{at: 3 * time.Second, ip: "203.0.113.7", method: "POST", path: "/login", status: 401},
		{at: 4 * time.Second, ip: "203.0.113.7", method: "POST", path: "/login", status: 401, trip: true},
	})
	want := []step{{"ip.src=203.0.113.7", 1, false}, {"ip.src=203.0.113.7", 2, false}, {"ip.src=203.0.113.7", 3, false}, {"ip.src=203.0.113.7", 4, true}}
	if !slices.Equal(got, want) {
		t.Errorf("OnCount saw %v, want %v", got, want)
	}
}

func TestKeyAndPeek(t *testing.T) {
	e := newEngine(t, loginRule)
	feed(t, e, []req{
		{at: 0, ip: "203.0.113.7", method: "POST", path: "/login", status: 401},
		{at: time.Second, ip: "203.0.113.7", method: "POST", path: "/login", status: 401},
	})
	ev := characteristics.Event{IP: netip.MustParseAddr("203.0.113.7")}
	key, vals, ok := e.Key(0, &ev, nil)
	if !ok || string(vals) != "203.0.113.7\xff" {
		t.Fatalf("Key = %x %q %v", key, vals, ok)
	}
	res, ok := e.Peek(0, key, t0.Add(2*time.Second))
	if !ok || res.Count != 2 || res.Exceeded {
		t.Errorf("Peek = %+v %v, want a count of 2", res, ok)
	}
	// Peeking counts nothing.
	if res, _ := e.Peek(0, key, t0.Add(2*time.Second)); res.Count != 2 {
		t.Errorf("second Peek = %+v", res)
	}
	if _, _, ok := e.Key(0, &characteristics.Event{}, nil); ok {
		t.Error("an event without an address has a key")
	}
}

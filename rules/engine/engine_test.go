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

func newEngine(t *testing.T, allowed func([]characteristics.Field) bool, trips *[]engine.Trip, mods ...string) *engine.Engine {
	t.Helper()
	fsys := fstest.MapFS{}
	for i, m := range mods {
		fsys[string(rune('a'+i))+".rego"] = &fstest.MapFile{Data: []byte(m)}
	}
	set, err := rules.Load(fsys, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := engine.Config{Rules: set, Allowed: allowed}
	if trips != nil {
		cfg.OnTrip = func(tr engine.Trip) { *trips = append(*trips, tr) }
	}
	e, err := engine.New(cfg)
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
	want   bool // mitigated
}

var t0 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

func feed(t *testing.T, e *engine.Engine, reqs []req) {
	t.Helper()
	var m engine.Matches
	for i, r := range reqs {
		ev := characteristics.Event{Time: t0.Add(r.at), IP: netip.MustParseAddr(r.ip), Method: r.method, Path: r.path, Status: r.status, RequestTime: r.rt}
		m.Reset()
		e.Prepare(&ev, &m)
		if got := e.Apply(ev.Time, m.Items, m.Keys); got != r.want {
			t.Errorf("request %d (%+v): mitigated = %v, want %v", i, r, got, r.want)
		}
	}
}

func TestTripThenMitigate(t *testing.T) {
	var trips []engine.Trip
	e := newEngine(t, nil, &trips, loginRule)
	bad, other := "203.0.113.7", "198.51.100.1"
	feed(t, e, []req{
		{0, bad, "POST", "/login", 401, 0, false},
		{time.Second, bad, "POST", "/login", 401, 0, false},
		{2 * time.Second, bad, "POST", "/login", 401, 0, false},
		// The fourth failure in a minute goes over 3: it trips, and the
		// tripping request is itself covered by the mitigation expression.
		{3 * time.Second, bad, "POST", "/login", 401, 0, true},
		{4 * time.Second, bad, "GET", "/account", 200, 0, true},    // mitigation expression: any path but /health
		{5 * time.Second, bad, "GET", "/health", 200, 0, false},    // not covered
		{6 * time.Second, other, "GET", "/account", 200, 0, false}, // another client
		{11 * time.Minute, bad, "GET", "/account", 200, 0, false},  // expired (10m after the trip)
	})
	if len(trips) != 1 || trips[0].Scope[0].Value != bad || trips[0].Rule.Name != "login" {
		t.Fatalf("trips = %+v", trips)
	}
	ms := e.Mitigations()
	if len(ms) != 1 || ms[0].Count != 2 || ms[0].Trips != 1 || !ms[0].FirstSeen.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("mitigations = %+v", ms)
	}
}

func TestRetripExtends(t *testing.T) {
	e := newEngine(t, nil, nil, loginRule)
	ip := "2001:db8::1"
	var reqs []req
	for i := range 10 { // one failure every 10s: over 3/min from the 4th on
		reqs = append(reqs, req{time.Duration(i) * 10 * time.Second, ip, "POST", "/login", 401, 0, i >= 3})
	}
	feed(t, e, reqs)
	ms := e.Mitigations()
	if len(ms) != 1 || ms[0].Trips != 7 || !ms[0].Expires.Equal(t0.Add(90*time.Second+10*time.Minute)) {
		t.Fatalf("mitigations = %+v", ms)
	}
	if n := e.Expire(t0.Add(time.Hour)); n != 1 || len(e.Mitigations()) != 0 {
		t.Fatalf("Expire forgot %d, %d left", n, len(e.Mitigations()))
	}
}

func TestTripReportsExtensions(t *testing.T) {
	var trips []engine.Trip
	e := newEngine(t, nil, &trips, loginRule)
	var reqs []req
	for i := range 10 { // trips from the 4th on, every 10s; a tenth of 10m is 1m
		reqs = append(reqs, req{time.Duration(i) * 10 * time.Second, "192.0.2.5", "POST", "/login", 401, 0, i >= 3})
	}
	feed(t, e, reqs)
	if len(trips) != 2 || trips[0].Extended || !trips[1].Extended || !trips[1].Time.Equal(t0.Add(90*time.Second)) {
		t.Fatalf("trips = %+v", trips)
	}
}

func TestAllowlisted(t *testing.T) {
	asked := 0
	e := newEngine(t, func(sc []characteristics.Field) bool {
		asked++
		return sc[0].Value == "192.0.2.1"
	}, nil, loginRule)
	var reqs []req
	for i := range 8 {
		reqs = append(reqs, req{time.Duration(i) * time.Second, "192.0.2.1", "POST", "/login", 401, 0, false})
	}
	feed(t, e, reqs)
	if len(e.Mitigations()) != 0 || asked != 1 {
		t.Fatalf("allowlisted scope mitigated (%d mitigations) or asked %d times", len(e.Mitigations()), asked)
	}
}

func TestScore(t *testing.T) {
	e := newEngine(t, nil, nil, scoreRule)
	feed(t, e, []req{
		{0, "203.0.113.9", "GET", "/report", 200, 0.9, false},
		{time.Second, "203.0.113.9", "GET", "/report", 200, 0.9, false},
		{2 * time.Second, "203.0.113.9", "GET", "/report", 200, 0.5, true}, // 2.3s of request time > 2
	})
}

func TestUnkeyableEventSkipped(t *testing.T) {
	e := newEngine(t, nil, nil, loginRule)
	var m engine.Matches
	ev := characteristics.Event{Time: t0, Method: "POST", Path: "/login", Status: 401} // no address
	if n := e.Prepare(&ev, &m); n != 0 {
		t.Fatalf("Prepare returned %d matches for an event without ip.src", n)
	}
}

func TestPrepareAllocs(t *testing.T) {
	e := newEngine(t, nil, nil, loginRule, scoreRule)
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

func TestOnCount(t *testing.T) {
	e := newEngine(t, nil, nil, loginRule)
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
		{0, "203.0.113.7", "POST", "/login", 401, 0, false},
		{time.Second, "203.0.113.7", "GET", "/", 200, 0, false}, // not counted
		{2 * time.Second, "203.0.113.7", "POST", "/login", 401, 0, false},
		{3 * time.Second, "203.0.113.7", "POST", "/login", 401, 0, false},
		{4 * time.Second, "203.0.113.7", "POST", "/login", 401, 0, true},
	})
	want := []step{{"ip.src=203.0.113.7", 1, false}, {"ip.src=203.0.113.7", 2, false}, {"ip.src=203.0.113.7", 3, false}, {"ip.src=203.0.113.7", 4, true}}
	if !slices.Equal(got, want) {
		t.Errorf("OnCount saw %v, want %v", got, want)
	}
}

package throttle

import (
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/guardd/guardd/characteristics"
)

func concurrencyRule(name string, n int) string {
	return fmt.Sprintf(`# METADATA
# title: %[1]s
# custom:
#   characteristics: [ip.src]
#   concurrency: %[2]d
#   action: throttle
package guardd.rules.%[1]s

count if startswith(input.http.path, "/api/")
`, name, n)
}

func (r *req) decideID(rs *Rules, ip, path, id string, at time.Time) Verdict {
	r.ev.Reset()
	r.ev.IP = netip.MustParseAddr(ip)
	r.ev.Method, r.ev.Path, r.ev.Time = "GET", path, at
	if id != "" {
		r.ev.Headers = append(r.ev.Headers, characteristics.Field{Name: "x-request-id", Value: id})
	}
	rs.Set().Eval(&r.ev, &r.m)
	var v Verdict
	v, r.buf = rs.Decide(&r.ev, &r.m, at, r.buf)
	return v
}

func logLine(id string, status int, rt float64, at time.Time) *characteristics.Event {
	ev := &characteristics.Event{Status: status, RequestTime: rt, Time: at}
	ev.Vars = append(ev.Vars, characteristics.Field{Name: "request_id", Value: id})
	return ev
}

// TestConcurrency: at most N of a key's requests in flight; a log line
// gives its slot back, and so does the timeout; another key is unaffected;
// a request without an ID is not counted.
func TestConcurrency(t *testing.T) {
	l, _ := New(Config{InFlightTimeout: 30 * time.Second})
	rs, err := l.Build(load(t, concurrencyRule("api_conc", 2)))
	if err != nil {
		t.Fatal(err)
	}
	var r req
	for i, want := range []int64{1, 0} {
		if v := r.decideID(rs, "192.0.2.1", "/api/", fmt.Sprint("a", i), t0); v.Refused || v.Remaining != want {
			t.Fatalf("request %d: %+v", i, v)
		}
	}
	v := r.decideID(rs, "192.0.2.1", "/api/", "a2", t0)
	if !v.Refused || v.Retry != time.Second || string(v.AppendPolicy(nil)) != `"api_conc";q=2` {
		t.Fatalf("third in flight: %+v %s", v, v.AppendPolicy(nil))
	}
	if v := r.decideID(rs, "192.0.2.2", "/api/", "b0", t0); v.Refused {
		t.Fatal("another key refused")
	}
	if v := r.decideID(rs, "192.0.2.1", "/api/", "", t0); v.Matched {
		t.Fatal("a request without an ID was counted")
	}
	l.Observe(logLine("a0", 200, 0.1, t0))
	if v := r.decideID(rs, "192.0.2.1", "/api/", "a3", t0); v.Refused {
		t.Fatal("refused after a log line released a slot")
	}
	if v := r.decideID(rs, "192.0.2.1", "/api/", "a4", t0); !v.Refused {
		t.Fatal("admitted a third again")
	}
	l.Step(t0.Add(31 * time.Second)) // a1, a3 and b0 time out
	if st := l.inflight.stats(); st.total != 0 || st.timeouts != 3 || st.logged != 1 {
		t.Fatalf("stats %+v, want none in flight, 3 timeouts, 1 logged", st)
	}
	if v := r.decideID(rs, "192.0.2.1", "/api/", "a5", t0.Add(31*time.Second)); v.Refused {
		t.Fatal("refused after the timeout")
	}
}

// TestShedding: while a signal is over its threshold, the lowest class is
// shed first, then the next; the first class never is; the level steps
// down only after Hold once every signal is below Recover times its
// threshold.
func TestShedding(t *testing.T) {
	classRule := func(name, prefix string) string {
		return fmt.Sprintf(`# METADATA
# title: %[1]s
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 1000000
#   action: throttle
#   shadow: true
package guardd.rules.%[1]s

count if startswith(input.http.path, %[2]q)
`, name, prefix)
	}
	l, err := New(Config{Shedding: ShedConfig{
		Classes: []ShedClass{{Name: "critical", Rules: []string{"pay"}}, {Name: "default"}, {Name: "best_effort", Rules: []string{"search"}}},
		Latency: 500 * time.Millisecond, Hold: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := l.Build(load(t, classRule("pay", "/pay"), classRule("search", "/search")))
	if err != nil {
		t.Fatal(err)
	}
	var r req
	shed := func(at time.Time) (out [3]bool) {
		for i, p := range []string{"/pay", "/home", "/search"} {
			out[i] = r.decide(rs, "192.0.2.1", p, at).Shed
		}
		return out
	}
	at := t0
	step := func(latency float64) {
		for range 10 {
			l.Observe(logLine("-", 200, latency, at))
		}
		at = at.Add(time.Second)
		l.Step(at)
	}
	if got := shed(at); got != [3]bool{} {
		t.Fatalf("calm: %v", got)
	}
	step(0.9)
	if got := shed(at); got != [3]bool{false, false, true} {
		t.Fatalf("overloaded once: shed %v, want best effort only", got)
	}
	step(0.9)
	step(0.9) // the first class is never shed
	if got := shed(at); got != [3]bool{false, true, true} {
		t.Fatalf("overloaded on: shed %v, want all but critical", got)
	}
	step(0.45) // below the threshold, not below 0.8 of it: held
	step(0.1)  // calm, but held for 5s since the last change
	if got := shed(at); got != [3]bool{false, true, true} {
		t.Fatalf("calm within hold: %v", got)
	}
	for range 4 {
		step(0.1)
	}
	if got := shed(at); got != [3]bool{false, false, true} {
		t.Fatalf("calm past hold: %v, want one level down", got)
	}
	if v := r.decide(rs, "192.0.2.1", "/search", at); v.Retry != 5*time.Second {
		t.Errorf("shed retry %v, want the hold", v.Retry)
	}
}

// TestConcurrentUse runs Decide, Observe, Step and Build at once; run it
// with -race.
func TestConcurrentUse(t *testing.T) {
	l, _ := New(Config{Shedding: ShedConfig{Classes: []ShedClass{{Name: "a", Rules: []string{"api"}}, {Name: "b"}}, Latency: time.Millisecond}})
	set := load(t, rule("api", "gcra", 5, ""), concurrencyRule("api_conc", 2))
	rs, _ := l.Build(set)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			var r req
			for i := range 500 {
				id := fmt.Sprintf("%d-%d", g, i)
				r.decideID(rs, fmt.Sprintf("192.0.2.%d", i%7), "/api/x", id, t0)
				l.Observe(logLine(id, 200+300*(i%2), 0.01, t0))
			}
		})
	}
	wg.Go(func() {
		for i := range 50 {
			l.Step(t0.Add(time.Duration(i) * time.Second))
			l.Build(set)
		}
	})
	wg.Wait()
}

// TestAdaptiveLimit: AIMD grows the in-flight limit by one per fast
// interval while it is used, cuts a tenth per slow one, and sheds when the
// requests in flight pass it.
func TestAdaptiveLimit(t *testing.T) {
	s := &shedder{}
	s.cfg, _ = (&ShedConfig{Classes: []ShedClass{{Name: "a"}, {Name: "b"}}, InFlight: 20, Latency: 100 * time.Millisecond, Adaptive: true}).withDefaults()
	at := int64(0)
	step := func(latency float64, inFlight int) int64 {
		s.observe(200, latency)
		at += int64(time.Second)
		s.step(at, inFlight)
		return s.limit.Load()
	}
	if l := step(0.01, 5); l != 20 {
		t.Fatalf("fast but unused: limit %d, want 20", l)
	}
	if l := step(0.01, 15); l != 21 {
		t.Fatalf("fast and used: limit %d, want 21", l)
	}
	if l := step(0.5, 15); l != 18 {
		t.Fatalf("slow: limit %d, want 18", l)
	}
	if s.level.Load() != 1 {
		t.Fatal("slow: not shedding")
	}
	for range 40 {
		step(0.5, 15)
	}
	if l := s.limit.Load(); l != 1 {
		t.Fatalf("slow for long: limit %d, want 1", l)
	}
	for range 300 {
		step(0.01, 1000)
	}
	if l := s.limit.Load(); l != 200 {
		t.Fatalf("fast for long: limit %d, want the cap 200", l)
	}
	if _, err := (&ShedConfig{Classes: []ShedClass{{Name: "a"}, {Name: "b"}}, Latency: time.Second, Adaptive: true}).withDefaults(); err == nil {
		t.Error("adaptive without in_flight accepted")
	}
}

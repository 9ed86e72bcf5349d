package throttle

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/rules"
)

// rule is a throttle rule on ip.src for paths under /api/.
func rule(name, alg string, requests int, extra string) string {
	return fmt.Sprintf(`# METADATA
# title: %[1]s
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: %[3]d
#   action: throttle
#   algorithm: %[2]s
%[4]spackage guardd.rules.%[1]s

count if startswith(input.http.path, "/api/")
`, name, alg, requests, extra)
}

func load(t testing.TB, files ...string) *rules.Set {
	t.Helper()
	fs := fstest.MapFS{}
	for i, f := range files {
		fs[fmt.Sprintf("r%d.rego", i)] = &fstest.MapFile{Data: []byte(f)}
	}
	set, err := rules.Load(fs, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

var t0 = time.Date(2026, 11, 1, 10, 0, 30, 0, time.UTC) // mid-window: sliding and fixed windows differ

type req struct {
	ev  characteristics.Event
	m   rules.Matches
	buf []byte
}

func (r *req) decide(rs *Rules, ip, path string, at time.Time) Verdict {
	r.ev.Reset()
	r.ev.IP = netip.MustParseAddr(ip)
	r.ev.Method, r.ev.Path, r.ev.Time = "GET", path, at
	rs.Set().Eval(&r.ev, &r.m)
	var v Verdict
	v, r.buf = rs.Decide(&r.ev, &r.m, at, r.buf)
	return v
}

// TestBurstEveryAlgorithm: a burst from one client at one instant is
// admitted exactly as the algorithm allows, the rest refused with the
// algorithm's exact wait rounded up; remaining falls; another client and
// other paths are unaffected; the request at Retry-After is admitted.
func TestBurstEveryAlgorithm(t *testing.T) {
	for _, tc := range []struct {
		alg      string
		extra    string
		admitted int
		retry    time.Duration // the wait the algorithm computes after the burst
	}{
		// sliding window at mid-window with an empty previous window: 10
		// admitted; the window's 10 (and the refused ones) slide out of
		// the estimate only as the next window passes.
		{"sliding_window", "", 10, 0},
		{"fixed_window", "", 10, 30 * time.Second},
		{"sliding_log", "", 10, 60 * time.Second},
		{"token_bucket", "#   burst: 4\n", 4, 6 * time.Second},
		{"gcra", "#   burst: 4\n", 4, 6 * time.Second},
		{"token_bucket", "", 10, 6 * time.Second},
		{"gcra", "", 10, 6 * time.Second},
	} {
		t.Run(tc.alg+strings.TrimSpace(strings.TrimPrefix(tc.extra, "#")), func(t *testing.T) {
			l, _ := New(Config{})
			rs, err := l.Build(load(t, rule("api", tc.alg, 10, tc.extra)))
			if err != nil {
				t.Fatal(err)
			}
			var r req
			last := int64(1 << 62)
			for i := range tc.admitted {
				v := r.decide(rs, "192.0.2.1", "/api/x", t0)
				if v.Refused || !v.Matched || v.Remaining >= last {
					t.Fatalf("request %d: %+v, want admitted with remaining below %d", i+1, v, last)
				}
				last = v.Remaining
			}
			if last != 0 {
				t.Errorf("remaining after the burst: %d", last)
			}
			var v Verdict
			for range 5 {
				v = r.decide(rs, "192.0.2.1", "/api/x", t0)
				if !v.Refused || v.Rule.Name != "api" {
					t.Fatalf("over the limit: %+v", v)
				}
			}
			if tc.retry != 0 && v.Retry != tc.retry {
				t.Errorf("retry %v, want %v", v.Retry, tc.retry)
			}
			if b := string(v.AppendRateLimit(nil)); b != fmt.Sprintf(`"api";r=0;t=%d`, Seconds(v.Retry)) {
				t.Errorf("RateLimit %s", b)
			}
			if b := string(v.AppendPolicy(nil)); b != `"api";q=10;w=60` {
				t.Errorf("RateLimit-Policy %s", b)
			}
			if o := r.decide(rs, "192.0.2.2", "/api/x", t0); o.Refused || o.Remaining != int64(tc.admitted)-1 {
				t.Errorf("another client: %+v", o)
			}
			if o := r.decide(rs, "192.0.2.1", "/other", t0); o.Matched {
				t.Errorf("another path: %+v", o)
			}
			// A nanosecond before the wait: refused; at it: admitted.
			if o := r.decide(rs, "192.0.2.1", "/api/x", t0.Add(v.Retry-time.Nanosecond)); !o.Refused {
				t.Errorf("before Retry-After: admitted")
			}
			// The refusal just made counts for the window algorithms: ask its wait.
			w := r.decide(rs, "192.0.2.1", "/api/x", t0.Add(v.Retry-time.Nanosecond))
			at := t0.Add(v.Retry)
			if w.Refused {
				at = t0.Add(v.Retry - time.Nanosecond + w.Retry)
			}
			if o := r.decide(rs, "192.0.2.1", "/api/x", at); o.Refused {
				t.Errorf("at Retry-After: refused %+v", o)
			}
		})
	}
}

// TestMostRestrictive: several throttle rules count one request; the one
// that refuses with the longest wait decides, else the one with the least
// remaining.
func TestMostRestrictive(t *testing.T) {
	l, _ := New(Config{})
	rs, err := l.Build(load(t, rule("wide", "fixed_window", 5, ""), rule("narrow", "gcra", 3, ""), rule("big", "sliding_window", 100, "")))
	if err != nil {
		t.Fatal(err)
	}
	var r req
	for i, want := range []struct {
		rule      string
		remaining int64
	}{{"narrow", 2}, {"narrow", 1}, {"narrow", 0}} {
		v := r.decide(rs, "192.0.2.1", "/api/", t0)
		if v.Refused || v.Rule.Name != want.rule || v.Remaining != want.remaining {
			t.Fatalf("request %d: %s r=%d, want %s r=%d", i+1, v.Rule.Name, v.Remaining, want.rule, want.remaining)
		}
	}
	// narrow refuses (retry 20s), wide still admits: narrow decides.
	v := r.decide(rs, "192.0.2.1", "/api/", t0)
	if !v.Refused || v.Rule.Name != "narrow" || v.Retry != 20*time.Second {
		t.Fatalf("4th: %+v", v)
	}
	// Both refuse: wide's fixed window ends in 30s, narrow's wait is 20s.
	r.decide(rs, "192.0.2.1", "/api/", t0)
	v = r.decide(rs, "192.0.2.1", "/api/", t0)
	if !v.Refused || v.Rule.Name != "wide" || v.Retry != 30*time.Second {
		t.Fatalf("6th: %s %v", v.Rule.Name, v.Retry)
	}
}

// TestShadow: a shadow rule counts and decides but never refuses; what it
// would have refused is counted.
func TestShadow(t *testing.T) {
	for _, global := range []bool{false, true} {
		extra := "#   shadow: true\n"
		if global {
			extra = ""
		}
		reg := prometheus.NewRegistry()
		l, _ := New(Config{Shadow: global, Registerer: reg})
		rs, err := l.Build(load(t, rule("api", "gcra", 2, extra)))
		if err != nil {
			t.Fatal(err)
		}
		var r req
		for i := range 5 {
			if v := r.decide(rs, "192.0.2.1", "/api/", t0); v.Refused || v.Matched {
				t.Fatalf("global %v, request %d: %+v", global, i, v)
			}
		}
		if n := testutil.ToFloat64(l.m.vec.WithLabelValues("api", "shadow_refused")); n != 3 {
			t.Errorf("global %v: shadow_refused %v, want 3", global, n)
		}
		if n := testutil.ToFloat64(l.m.vec.WithLabelValues("api", "allowed")); n != 2 {
			t.Errorf("global %v: allowed %v, want 2", global, n)
		}
	}
}

// TestJitter: Retry-After gets at most retry_jitter more, never less.
func TestJitter(t *testing.T) {
	l, _ := New(Config{})
	rs, _ := l.Build(load(t, rule("api", "gcra", 1, "#   retry_jitter: 5s\n")))
	var r req
	r.decide(rs, "192.0.2.1", "/api/", t0)
	seen := map[time.Duration]bool{}
	for range 200 {
		v := r.decide(rs, "192.0.2.1", "/api/", t0)
		if !v.Refused || v.Retry < time.Minute || v.Retry > time.Minute+5*time.Second {
			t.Fatalf("retry %v, want in [60s, 65s]", v.Retry)
		}
		seen[v.Retry] = true
	}
	if len(seen) < 2 {
		t.Error("no jitter")
	}
}

// TestReloadKeepsCounts: a rebuilt rule set keeps the counts of a rule
// whose limit did not change, and starts afresh when it did.
func TestReloadKeepsCounts(t *testing.T) {
	l, _ := New(Config{})
	rs, _ := l.Build(load(t, rule("api", "gcra", 2, "")))
	var r req
	r.decide(rs, "192.0.2.1", "/api/", t0)
	r.decide(rs, "192.0.2.1", "/api/", t0)
	rs, _ = l.Build(load(t, rule("api", "gcra", 2, "")))
	if v := r.decide(rs, "192.0.2.1", "/api/", t0); !v.Refused {
		t.Error("same limit after reload: counts lost")
	}
	rs, _ = l.Build(load(t, rule("api", "gcra", 3, "")))
	if v := r.decide(rs, "192.0.2.1", "/api/", t0); v.Refused {
		t.Error("new limit after reload: old counts kept")
	}
}

func TestSeconds(t *testing.T) {
	for d, want := range map[time.Duration]int64{0: 1, 1: 1, time.Second: 1, time.Second + 1: 2, 59*time.Second + 999*time.Millisecond: 60} {
		if got := Seconds(d); got != want {
			t.Errorf("Seconds(%v) = %d, want %d", d, got, want)
		}
	}
}

// TestReconfigure: a reload's max_keys reaches the local tables (new ones,
// counts afresh) and its shadow the rules; an unchanged max_keys keeps the
// counts.
func TestReconfigure(t *testing.T) {
	reg := prometheus.NewRegistry()
	l, _ := New(Config{Registerer: reg})
	set := load(t, rule("api", "gcra", 1, ""))
	rs, _ := l.Build(set)
	var r req
	if v := r.decide(rs, "192.0.2.1", "/api/", t0); v.Refused {
		t.Fatal("first request refused")
	}
	// Shadow only: the counts stay, the refusal is not enforced.
	if err := l.Reconfigure(0, true); err != nil {
		t.Fatal(err)
	}
	rs, _ = l.Build(set)
	if v := r.decide(rs, "192.0.2.1", "/api/", t0); v.Refused || testutil.ToFloat64(l.m.vec.WithLabelValues("api", "shadow_refused")) != 1 {
		t.Fatalf("shadow after reconfigure: %+v, shadow_refused %v", v, testutil.ToFloat64(l.m.vec.WithLabelValues("api", "shadow_refused")))
	}
	// One key per table: a new table, and a second client evicts the first.
	if err := l.Reconfigure(1, false); err != nil {
		t.Fatal(err)
	}
	rs, _ = l.Build(set)
	for i, tc := range []struct {
		ip      string
		refused bool
	}{{"192.0.2.1", false}, {"192.0.2.1", true}, {"192.0.2.2", false}, {"192.0.2.1", false}} {
		if v := r.decide(rs, tc.ip, "/api/", t0); v.Refused != tc.refused {
			t.Errorf("max_keys 1, request %d from %s: refused %v, want %v", i, tc.ip, v.Refused, tc.refused)
		}
	}
	if l.Reconfigure(-1, false) == nil {
		t.Error("negative max keys accepted")
	}
}

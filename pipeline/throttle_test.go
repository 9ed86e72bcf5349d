package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/guardd/guardd/config"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/throttle"
)

// throttleRule is a throttle rule on ip.src counting the paths under prefix.
func throttleRule(name, alg string, requests int, prefix, extra string) string {
	return fmt.Sprintf(`# METADATA
# title: %[1]s
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: %[3]d
#   action: throttle
#   algorithm: %[2]s
%[5]spackage guardd.rules.%[1]s

count if startswith(input.http.path, %[4]q)
`, name, alg, requests, prefix, extra)
}

// TestReplayThrottle: a replay admits or refuses each request a throttle
// rule counts as the decision API would, on the lines' own time: exact
// counts per client and per rule, under a token bucket and a sliding
// window, the client within its budget unaffected, shadow rules counted
// apart and never actioned.
func TestReplayThrottle(t *testing.T) {
	var (
		tb  = throttleRule("tb", "token_bucket", 10, "/api/", "#   burst: 5\n")
		sw  = throttleRule("sw", "sliding_window", 20, "/search", "")
		sh  = throttleRule("sh", "fixed_window", 3, "/api/", "#   shadow: true\n")
		t0  = time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC) // a window's start
		src lines
	)
	at := func(ip, path string, n int, from time.Time, step time.Duration) {
		for i := range n {
			src = append(src, logLine(ip, path, 200, from.Add(time.Duration(i)*step)))
		}
	}
	const a, b = "203.0.113.7", "198.51.100.9"
	// a: 30 searches at one a second in the first window: the sliding
	// window (empty previous window) admits 20, refuses 10.
	at(a, "/search", 30, t0, time.Second)
	// b: 10 searches, within its own budget.
	at(b, "/search", 10, t0.Add(30*time.Second), time.Second)
	// 12 API requests at one instant: the bucket (burst 5) admits 5.
	at(a, "/api/x", 12, t0.Add(40*time.Second), 0)
	at(b, "/api/x", 4, t0.Add(40*time.Second), 0)
	// Mid-window the previous window's 20 weigh 10: 10 of 15 admitted.
	at(a, "/search", 15, t0.Add(90*time.Second), 0)
	// A minute on the bucket is full again (10 a minute, capped at 5).
	at(a, "/api/x", 12, t0.Add(100*time.Second), 0)
	at(b, "/api/x", 4, t0.Add(100*time.Second), 0)

	type client struct {
		requests, throttled int64
		rules               string
		shadow              map[string]int64
	}
	for _, tc := range []struct {
		name  string
		rules []string
		extra string
		want  map[string]client // by address; the others are not reported
		rep   []Throttled
	}{
		{"token bucket", []string{tb}, "", map[string]client{a: {69, 14, "tb", nil}},
			[]Throttled{{Rule: "tb", Counted: 32, Refused: 14, Clients: 1}}},
		{"sliding window", []string{sw}, "", map[string]client{a: {69, 15, "sw", nil}},
			[]Throttled{{Rule: "sw", Counted: 55, Refused: 15, Clients: 1}}},
		{"both and a shadow rule", []string{tb, sw, sh}, "", map[string]client{a: {69, 29, "sw,tb", map[string]int64{"sh": 18}}},
			[]Throttled{{Rule: "sh", Shadow: true, Counted: 32, Refused: 20, Clients: 2},
				{Rule: "sw", Counted: 55, Refused: 15, Clients: 1}, {Rule: "tb", Counted: 32, Refused: 14, Clients: 1}}},
		{"decision.throttle_shadow", []string{tb}, "decision: {throttle_shadow: true}\n", map[string]client{},
			[]Throttled{{Rule: "tb", Shadow: true, Counted: 32, Refused: 14, Clients: 1}}},
	} {
		for _, workers := range []int{1, 4} {
			t.Run(fmt.Sprintf("%s/workers=%d", tc.name, workers), func(t *testing.T) {
				dir := t.TempDir()
				for i, r := range tc.rules {
					os.WriteFile(filepath.Join(dir, fmt.Sprintf("r%d.rego", i)), []byte(r), 0o644)
				}
				cfg, err := config.Parse("t.yml", []byte(fmt.Sprintf("rules: {disable_builtin: true, dirs: [%q]}\n%s", dir, tc.extra)))
				if err != nil {
					t.Fatal(err)
				}
				p, err := Build(cfg, BuildOptions{})
				if err != nil {
					t.Fatal(err)
				}
				lim, err := throttle.New(throttle.Config{Shadow: cfg.Decision.ThrottleShadow})
				if err != nil {
					t.Fatal(err)
				}
				limits, err := lim.Build(p.Rules())
				if err != nil {
					t.Fatal(err)
				}
				rep := NewReport(true)
				rep.SimulateThrottle(limits)
				h := NewHolder(p)
				defer h.Close()
				st, err := Run(context.Background(), Config{Pipelines: h, Store: newStore(t), Report: rep, Workers: workers,
					Replay: true, Now: func() time.Time { return wall }}, src)
				if err != nil {
					t.Fatal(err)
				}
				if st.Mitigated != 0 {
					t.Errorf("%d requests mitigated: a throttle makes no mitigation", st.Mitigated)
				}
				got := map[string]client{}
				for _, c := range rep.Clients() {
					if c.Mitigated || c.Actioned != c.Actions[mitigation.ActionThrottle] {
						t.Errorf("client %+v: only throttle actions, no mitigation expected", c)
					}
					got[c.Addr.String()] = client{c.Requests, c.Actions[mitigation.ActionThrottle], strings.Join(c.Rules, ","), c.Shadow}
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("clients %+v, want %+v", got, tc.want)
				}
				if rs := rep.Throttled(); !reflect.DeepEqual(rs, tc.rep) {
					t.Errorf("per rule %+v, want %+v", rs, tc.rep)
				}
			})
		}
	}
}

// TestReplayNoThrottleRule: without throttle rules the replay simulates
// nothing (and costs nothing more).
func TestReplayNoThrottleRule(t *testing.T) {
	p := build(t, "")
	defer p.Release()
	lim, err := throttle.New(throttle.Config{})
	if err != nil {
		t.Fatal(err)
	}
	limits, err := lim.Build(p.Rules())
	if err != nil {
		t.Fatal(err)
	}
	rep := NewReport(true)
	if rep.SimulateThrottle(limits); rep.limits != nil {
		t.Fatal("a rule set without throttle rules is simulated")
	}
}

package rules

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/guardd/guardd/characteristics"
)

const header = "# METADATA\n# custom:\n#   characteristics: [ip.src]\n#   period: 1m\n#   requests_per_period: 10\n#   action: log\n"

func TestFallbackErrorsCountFalse(t *testing.T) {
	tests := []struct {
		name, module, reason string
		timeout              time.Duration
	}{
		{
			name:    "timeout",
			module:  header + "package guardd.rules.slow\n\ncount if {\n\tsome i in numbers.range(1, input.http.status * 10000)\n\ti == -1\n}\n",
			reason:  "timeout",
			timeout: time.Microsecond,
		},
		{
			name:    "conflict",
			module:  header + "package guardd.rules.conflict\n\nv := input.http.path\n\nv := input.http.host\n\ncount if {\n\tv == \"/\"\n\tsome i in numbers.range(1, input.http.status)\n\ti == 1\n}\n",
			reason:  "error",
			timeout: time.Minute,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			var logs bytes.Buffer
			s, err := Load(fstest.MapFS{"r.rego": {Data: []byte(tc.module)}}, Options{
				Registerer:  reg,
				Logger:      slog.New(slog.NewTextHandler(&logs, nil)),
				EvalTimeout: tc.timeout,
			})
			if err != nil {
				t.Fatal(err)
			}
			r := s.Rules()[0]
			if r.Native {
				t.Fatalf("rule %s compiled natively; the test needs a fallback", r.Name)
			}
			if !strings.Contains(logs.String(), "falls back to full OPA evaluation") || !strings.Contains(logs.String(), "rule="+r.Name) {
				t.Errorf("no fallback log line at load naming the rule:\n%s", logs.String())
			}
			e := characteristics.Event{Path: "/", Host: "example.com", Status: 404}
			var m Matches
			for range 5 {
				s.Eval(&e, &m)
				if m.Count(0) || m.Mitigate(0) {
					t.Fatalf("a failed evaluation counted as true")
				}
			}
			if got := testutil.ToFloat64(s.metrics.errors.WithLabelValues(r.Name, tc.reason)); got != 5 {
				t.Errorf("guardd_rules_evaluation_errors_total{reason=%q} = %v, want 5", tc.reason, got)
			}
			if got := testutil.ToFloat64(s.metrics.fallbacks.WithLabelValues(r.Name)); got != 5 {
				t.Errorf("guardd_rules_fallback_evaluations_total = %v, want 5", got)
			}
			if n := strings.Count(logs.String(), "evaluation failed"); n != 1 {
				t.Errorf("%d evaluation error lines logged for 5 failures in a second, want 1 (rate limited):\n%s", n, logs.String())
			}
			// Reloading registers on the same registry without error and
			// keeps counting on the same series.
			s2, err := Load(fstest.MapFS{"r.rego": {Data: []byte(tc.module)}}, Options{Registerer: reg, Logger: slog.New(slog.DiscardHandler), EvalTimeout: tc.timeout})
			if err != nil {
				t.Fatal(err)
			}
			s2.Eval(&e, &m)
			if got := testutil.ToFloat64(s2.metrics.fallbacks.WithLabelValues(r.Name)); got != 6 {
				t.Errorf("after reload, fallback counter = %v, want 6", got)
			}
		})
	}
}

// TestEvalConcurrent runs Eval from several goroutines, each with its own
// Matches, over native and fallback rules; run with -race.
func TestEvalConcurrent(t *testing.T) {
	b, err := Builtin(Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	g, err := LoadDir("testdata/good", Options{Logger: slog.New(slog.DiscardHandler), EvalTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Merge(b, g)
	if err != nil {
		t.Fatal(err)
	}
	// Reference results, computed sequentially.
	events := make([]characteristics.Event, 200)
	gen := newEventGen(9)
	want := make([]Matches, len(events))
	for i := range events {
		gen.next(&events[i])
		events[i] = events[i].Clone()
		s.Eval(&events[i], &want[i])
		want[i].count = append([]uint64(nil), want[i].count...)
		want[i].mitigate = append([]uint64(nil), want[i].mitigate...)
	}
	done := make(chan error)
	for w := range 4 {
		go func() {
			var m Matches
			for k := range 3 * len(events) {
				i := (k*7 + w) % len(events)
				s.Eval(&events[i], &m)
				for r := range s.Rules() {
					if m.Count(r) != want[i].Count(r) || m.Mitigate(r) != want[i].Mitigate(r) {
						done <- fmt.Errorf("worker %d event %d rule %s: differs from the sequential result", w, i, s.Rules()[r].Name)
						return
					}
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

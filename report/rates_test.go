package report

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestDecisionRates: the first load covers the time since the start; later
// ones only the decisions since the previous load, and a load with none new
// shows the latencies since the start.
func TestDecisionRates(t *testing.T) {
	reg := prometheus.NewRegistry()
	total := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "guardd_decision_requests_total", Help: "h"}, []string{"outcome"})
	dur := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "guardd_decision_duration_seconds", Help: "h", Buckets: []float64{0.001, 0.01, 0.1}})
	reg.MustRegister(total, dur)
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	r := &DecisionRates{Gatherer: reg, Start: start}
	for range 10 {
		total.WithLabelValues("allow").Inc()
		dur.Observe(0.0005)
	}
	var st Status
	r.Fill(&st, start.Add(10*time.Second))
	if st.Interval != 10*time.Second || st.Decisions != 1 || st.P50 <= 0 || st.P50 > 0.001 || st.P99 > 0.001 {
		t.Errorf("first load: %+v", st)
	}
	for range 20 {
		total.WithLabelValues("deny").Inc()
		dur.Observe(0.05)
	}
	st = Status{}
	r.Fill(&st, start.Add(15*time.Second))
	if st.Interval != 5*time.Second || st.Decisions != 4 || st.P50 <= 0.01 || st.P50 > 0.1 {
		t.Errorf("second load: %+v", st)
	}
	st = Status{}
	r.Fill(&st, start.Add(20*time.Second))
	if st.Decisions != 0 || st.P99 <= 0.01 || st.P99 > 0.1 {
		t.Errorf("load with nothing new: %+v", st)
	}
}

// TestDecisionRatesOutcomes: the summary's answers per outcome (allow left
// out), and the challenge solve rate only once the registry has the
// challenge counters.
func TestDecisionRatesOutcomes(t *testing.T) {
	reg := prometheus.NewRegistry()
	total := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "guardd_decision_requests_total", Help: "h"}, []string{"outcome"})
	reg.MustRegister(total)
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	r := &DecisionRates{Gatherer: reg, Start: start}
	total.WithLabelValues("allow").Add(100)
	total.WithLabelValues("block").Add(30)
	total.WithLabelValues("challenge").Add(10)
	var st Status
	r.Fill(&st, start.Add(10*time.Second))
	want := []Rate{{"block", 3, 30}, {"challenge", 1, 10}}
	if len(st.Answered) != 2 || st.Answered[0] != want[0] || st.Answered[1] != want[1] {
		t.Errorf("answered = %+v, want %+v", st.Answered, want)
	}
	if st.Challenge != nil {
		t.Errorf("challenge stats %+v without challenge metrics", st.Challenge)
	}
	shown := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "guardd_challenge_shown_total", Help: "h"}, []string{"rule"})
	passed := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "guardd_challenge_passed_total", Help: "h"}, []string{"rule"})
	reg.MustRegister(shown, passed)
	shown.WithLabelValues("a").Add(30)
	shown.WithLabelValues("b").Add(10)
	passed.WithLabelValues("a").Add(10)
	total.WithLabelValues("challenge").Add(10)
	st = Status{}
	r.Fill(&st, start.Add(20*time.Second))
	if st.Challenge == nil || st.Challenge.SolveRate() != 0.25 {
		t.Errorf("challenge = %+v, want 10 of 40", st.Challenge)
	}
	if len(st.Answered) != 2 || st.Answered[1] != (Rate{"challenge", 1, 20}) {
		t.Errorf("answered = %+v", st.Answered)
	}
}

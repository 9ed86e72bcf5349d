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

package challenge

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	shown, passed *prometheus.CounterVec
	failed        *prometheus.CounterVec
	clearance     [numReasons]prometheus.Counter
	rules         atomic.Pointer[map[string]struct{}]
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		shown:  prometheus.NewCounterVec(prometheus.CounterOpts{Name: "guardd_challenge_shown_total", Help: "Challenge pages shown, by rule."}, []string{"rule"}),
		passed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "guardd_challenge_passed_total", Help: "Challenges passed (a clearance set), by rule."}, []string{"rule"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "guardd_challenge_failed_total", Help: "Challenge solutions refused, and clients escalated for not passing, by rule and reason."}, []string{"rule", "reason"}),
	}
	cl := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "guardd_challenge_clearances_checked_total", Help: "Clearance cookies checked, by outcome (ok or why refused)."}, []string{"outcome"})
	for r := range numReasons {
		m.clearance[r] = cl.WithLabelValues(r.String())
	}
	empty := map[string]struct{}{}
	m.rules.Store(&empty)
	if reg != nil {
		reg.MustRegister(m.shown, m.passed, m.failed, cl)
	}
	return m
}

func (m *metrics) setRules(names []string) {
	set := make(map[string]struct{}, len(names))
	for _, n := range names {
		set[n] = struct{}{}
	}
	m.rules.Store(&set)
}

// label keeps rule labels to the loaded rules' names.
func (m *metrics) label(rule string) string {
	if _, ok := (*m.rules.Load())[rule]; ok {
		return rule
	}
	return "other"
}

func (m *metrics) shownFor(rule string) prometheus.Counter {
	return m.shown.WithLabelValues(m.label(rule))
}
func (m *metrics) passedFor(rule string) prometheus.Counter {
	return m.passed.WithLabelValues(m.label(rule))
}
func (m *metrics) failedFor(rule string, r Reason) prometheus.Counter {
	return m.failed.WithLabelValues(m.label(rule), r.String())
}

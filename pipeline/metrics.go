package pipeline

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/rules"
)

// Metrics are the per-event path's counters. One set lives as long as the
// process, across reloads.
type Metrics struct {
	Events      *prometheus.CounterVec // by source
	ParseErrors *prometheus.CounterVec // by source
	Future      *prometheus.CounterVec // by source
	Matches     *prometheus.CounterVec // by rule
	Trips       *prometheus.CounterVec // by rule and action

	events, parseErrors, future prometheus.Counter // nginx log
}

// NewMetrics registers the counters on reg; nil keeps them unexported.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Events:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "guardd_ingest_events_total", Help: "Events read, by source."}, []string{"source"}),
		ParseErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "guardd_ingest_parse_errors_total", Help: "Lines or packets that could not be parsed and were skipped, by source."}, []string{"source"}),
		Future:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "guardd_ingest_future_events_total", Help: "Events dated further ahead of the wall clock than the tolerance, counted at the wall clock instead."}, []string{"source"}),
		Matches:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "guardd_rules_matches_total", Help: "Events that matched a rule's counting expression and were counted."}, []string{"rule"}),
		Trips:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: "guardd_rules_trips_total", Help: "Times a rule went over its limit and created or extended a mitigation."}, []string{"rule", "action"}),
	}
	src := characteristics.SourceNginxLog.String()
	m.events, m.parseErrors, m.future = m.Events.WithLabelValues(src), m.ParseErrors.WithLabelValues(src), m.Future.WithLabelValues(src)
	if reg != nil {
		reg.MustRegister(m.Events, m.ParseErrors, m.Future, m.Matches, m.Trips)
	}
	return m
}

func (m *Metrics) batch(b *batch, rs []*rules.Rule, perRule []float64) {
	m.events.Add(float64(len(b.lines)))
	if b.bad > 0 {
		m.parseErrors.Add(float64(b.bad))
	}
	if b.future > 0 {
		m.future.Add(float64(b.future))
	}
	for i, n := range perRule {
		if n > 0 {
			m.Matches.WithLabelValues(rs[i].Name).Add(n)
		}
	}
}

func (m *Metrics) trip(rule string, a mitigation.Action) {
	m.Trips.WithLabelValues(rule, a.String()).Inc()
}

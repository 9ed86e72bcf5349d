package mitigation

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/guardd/guardd/action"
)

// metrics are the store's Prometheus collectors. Every label value comes from
// Action.String, a closed set; the per-action children are resolved once.
type metrics struct {
	active        [action.Len]prometheus.Gauge
	added         [action.Len]prometheus.Counter
	evictions     prometheus.Counter
	allowlisted   prometheus.Counter
	journalErrors prometheus.Counter
	setAside      prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	activeVec := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "guardd_mitigation_active",
		Help: "Mitigations currently held, by action.",
	}, []string{"action"})
	addedVec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "guardd_mitigation_added_total",
		Help: "Mitigations created (not counting extensions of an existing one), by action.",
	}, []string{"action"})
	m := &metrics{
		evictions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "guardd_mitigation_evictions_total",
			Help: "Live mitigations dropped before expiry because the table was full.",
		}),
		allowlisted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "guardd_mitigation_allowlisted_total",
			Help: "Mitigations refused because the allowlist covers their scope.",
		}),
		setAside: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "guardd_mitigation_state_files_set_aside_total",
			Help: "Damaged state files (snapshot or journal) renamed to <name>.corrupt at start; the store started with the records that could be read.",
		}),
		journalErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "guardd_mitigation_journal_errors_total",
			Help: "Failed writes, syncs or compactions of the state journal; mitigations stay enforced in memory.",
		}),
	}
	for i := range action.Len {
		a := Action(i)
		if !a.Mitigates() {
			continue // never a record: no series
		}
		m.active[a] = activeVec.WithLabelValues(a.String())
		m.added[a] = addedVec.WithLabelValues(a.String())
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{activeVec, addedVec, m.evictions, m.allowlisted, m.journalErrors, m.setAside} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	return m, nil
}

package nftables

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Reconcile results, the values of the result label.
const (
	resultOK       = "ok"       // the kernel matched the store
	resultRepaired = "repaired" // something was missing, extra or altered, and fixed
	resultError    = "error"    // the kernel could not be read or written
)

type metrics struct {
	elements   *prometheus.GaugeVec
	pushErrors prometheus.Counter
	reconciles *prometheus.CounterVec
	duration   prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		elements: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "guardd_nftables_elements",
			Help: "Elements guardd holds in its nftables sets (a prefix range counts once), by family (ipv4, ipv6) and kind (address, prefix).",
		}, []string{"family", "kind"}),
		pushErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "guardd_nftables_push_errors_total",
			Help: "Set elements the kernel refused, and pushes that failed as a whole (no permission, table missing, netlink error).",
		}),
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "guardd_nftables_reconcile_total",
			Help: "Reconciles of the kernel's sets with the mitigation store, by result (ok, repaired, error).",
		}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "guardd_nftables_push_duration_seconds",
			Help:    "Time to send one set of changes to the kernel, all batches included.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 9), // 0.5 ms to 33 s
		}),
	}
	for _, k := range []setKind{setV4, setV6, setV4Net, setV6Net} {
		m.elements.WithLabelValues(k.family(), k.kind())
	}
	for _, r := range []string{resultOK, resultRepaired, resultError} {
		m.reconciles.WithLabelValues(r)
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.elements, m.pushErrors, m.reconciles, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

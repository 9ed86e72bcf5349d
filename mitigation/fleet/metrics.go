package fleet

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	published *prometheus.CounterVec
	received  *prometheus.CounterVec
	errors    *prometheus.CounterVec
	dropped   prometheus.Counter
	delay     prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		published: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "guardd_fleet_mitigations_published_total",
			Help: "Local mitigation changes published to the fleet, by op (add, delete).",
		}, []string{"op"}),
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "guardd_fleet_mitigations_received_total",
			Help: "Mitigation changes from other nodes applied here, by op (add, delete).",
		}, []string{"op"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "guardd_fleet_errors_total",
			Help: "Failed propagation steps, by step (publish, load, read, decode).",
		}, []string{"step"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "guardd_fleet_mitigations_dropped_total",
			Help: "Local changes dropped unpublished because MaxPending were waiting for Redis.",
		}),
		delay: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "guardd_fleet_mitigation_propagation_seconds",
			Help:    "From publication on one node to application here (across hosts, as good as their clocks).",
			Buckets: []float64{.001, .002, .005, .01, .02, .05, .1, .25, 1},
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.published, m.received, m.errors, m.dropped, m.delay} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

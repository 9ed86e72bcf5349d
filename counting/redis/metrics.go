package redis

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	breaker   *prometheus.GaugeVec
	endpoint  *prometheus.GaugeVec
	nodes     prometheus.Gauge
	flushes   *prometheus.CounterVec
	duration  prometheus.Histogram
	keys      prometheus.Counter
	events    prometheus.Counter
	dropped   prometheus.Counter
	decisions *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		breaker: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "guardd_counting_redis_breaker_state",
			Help: "1 for the worst state of the Redis endpoints' circuit breakers (closed, half_open, open): open if any is open.",
		}, []string{"state"}),
		endpoint: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "guardd_counting_redis_endpoint_breaker_state",
			Help: "1 for the current state of each Redis endpoint's circuit breaker (the server, the Sentinel master, or each Cluster master by address).",
		}, []string{"endpoint", "state"}),
		nodes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "guardd_counting_redis_live_nodes",
			Help: "Fleet nodes seen in Redis within the node TTL; the lease divides headroom by it.",
		}),
		flushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "guardd_counting_redis_flushes_total",
			Help: "Pipelines of counter scripts sent to Redis, by outcome (ok, error, timeout, skipped while the breaker is open).",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "guardd_counting_redis_request_duration_seconds",
			Help:    "Round trip of one pipeline of counter scripts.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1},
		}),
		keys: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "guardd_counting_redis_keys_flushed_total",
			Help: "Counter scripts run (one per key per flush).",
		}),
		events: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "guardd_counting_redis_events_flushed_total",
			Help: "Event weight carried by the flushed deltas.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "guardd_counting_redis_dropped_events_total",
			Help: "Event weight of deltas dropped because their window closed before Redis could take them.",
		}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "guardd_counting_redis_decisions_total",
			Help: "Decisions by how they were made: fleet (two-tier), lease_wait (refused: this node used its lease and waits for the fleet count), the rule's on_store_error (open, closed, local).",
		}, []string{"mode"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.breaker, m.endpoint, m.nodes, m.flushes, m.duration, m.keys, m.events, m.dropped, m.decisions} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// setWorst sets the deployment-wide breaker gauge.
func (m *metrics) setWorst(s BreakerState) { setState(m.breaker.WithLabelValues, s) }

// setEndpoint sets one endpoint's breaker gauge. The endpoints are the
// deployment's masters (configuration), so the label is bounded.
func (m *metrics) setEndpoint(name string, s BreakerState) {
	setState(func(st ...string) prometheus.Gauge { return m.endpoint.WithLabelValues(name, st[0]) }, s)
}

// dropEndpoint forgets an endpoint that no longer serves any slot.
func (m *metrics) dropEndpoint(name string) {
	m.endpoint.DeletePartialMatch(prometheus.Labels{"endpoint": name})
}

func setState(g func(...string) prometheus.Gauge, s BreakerState) {
	for st := range numBreakerStates {
		v := 0.0
		if st == s {
			v = 1
		}
		g(st.String()).Set(v)
	}
}

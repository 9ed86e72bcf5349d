package crowdsec

import "github.com/prometheus/client_golang/prometheus"

type endpoint uint8

const (
	endpointStream endpoint = iota
	endpointQuery
	endpointOther
	numEndpoints
)

var endpointNames = [numEndpoints]string{"stream", "query", "other"}

type result uint8

const (
	resultOK result = iota
	resultForbidden
	resultBadRequest
	resultNotFound
	numResults
)

var resultNames = [numResults]string{"ok", "forbidden", "bad_request", "not_found"}

type metrics struct {
	requests    [numEndpoints][numResults]prometheus.Counter
	sentNew     prometheus.Counter
	sentDeleted prometheus.Counter
	resyncs     prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	req := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "guardd_crowdsec_requests_total",
		Help: "Bouncer API requests, by endpoint (stream, query, other) and result.",
	}, []string{"endpoint", "result"})
	sent := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "guardd_crowdsec_decisions_sent_total",
		Help: "Decisions sent to bouncers in stream answers, by list (new, deleted).",
	}, []string{"list"})
	m := &metrics{
		sentNew:     sent.WithLabelValues("new"),
		sentDeleted: sent.WithLabelValues("deleted"),
		resyncs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "guardd_crowdsec_view_resyncs_total",
			Help: "Times the bouncer view was rebuilt from a snapshot because the change feed no longer reached it.",
		}),
	}
	for e := range numEndpoints {
		for r := range numResults {
			m.requests[e][r] = req.WithLabelValues(endpointNames[e], resultNames[r])
		}
	}
	if reg != nil {
		reg.MustRegister(req, sent, m.resyncs)
	}
	return m
}

func (m *metrics) request(e endpoint, r result) { m.requests[e][r].Inc() }

package report

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// DecisionRates fills the status page's decision rate and latencies over the
// interval since the previous page load (the page reloads itself every 5 s),
// or since Start on the first, from the decision API's metrics in Gatherer.
type DecisionRates struct {
	Gatherer prometheus.Gatherer
	Start    time.Time // when the counters started

	mu   sync.Mutex
	prev decisionSample
}

// decisionSample is the decision counters at one time.
type decisionSample struct {
	at       time.Time
	total    float64            // decisions
	outcomes map[string]float64 // decisions per outcome
	// shown and passed sum guardd_challenge_shown_total and
	// guardd_challenge_passed_total; hasChallenge is set when the registry
	// has them.
	shown, passed float64
	hasChallenge  bool
	buckets       []float64 // cumulative counts per upper bound
	bounds        []float64
	count         float64
}

// Fill sets st's Interval, Decisions, P50 and P99 from a sample taken at now
// and the previous one, and keeps this one for the next call.
func (r *DecisionRates) Fill(st *Status, now time.Time) {
	cur := r.sample(now)
	r.mu.Lock()
	prev := r.prev
	if prev.at.IsZero() {
		prev = decisionSample{at: r.Start, buckets: make([]float64, len(cur.buckets))}
	}
	r.prev = cur
	r.mu.Unlock()
	st.Interval = cur.at.Sub(prev.at).Round(time.Millisecond)
	if secs := cur.at.Sub(prev.at).Seconds(); secs > 0 {
		st.Decisions = (cur.total - prev.total) / secs
	}
	delta := make([]float64, len(cur.buckets))
	for i := range delta {
		delta[i] = cur.buckets[i]
		if i < len(prev.buckets) {
			delta[i] -= prev.buckets[i]
		}
	}
	n := cur.count - prev.count
	if n <= 0 { // nothing new: the figures since the start
		delta, n = cur.buckets, cur.count
	}
	st.P50, st.P99 = Quantile(cur.bounds, delta, n, 0.5), Quantile(cur.bounds, delta, n, 0.99)
	st.Answered = st.Answered[:0]
	for o, total := range cur.outcomes {
		if o == "allow" || total == 0 {
			continue
		}
		r := Rate{Outcome: o, Total: total}
		if secs := cur.at.Sub(prev.at).Seconds(); secs > 0 {
			r.PerSecond = (total - prev.outcomes[o]) / secs
		}
		st.Answered = append(st.Answered, r)
	}
	slices.SortFunc(st.Answered, func(a, b Rate) int { return cmp.Or(cmp.Compare(b.Total, a.Total), cmp.Compare(a.Outcome, b.Outcome)) })
	if cur.hasChallenge {
		st.Challenge = &ChallengeStats{Shown: cur.shown, Passed: cur.passed}
	}
}

// sample reads the decision counters from the registry.
func (r *DecisionRates) sample(now time.Time) decisionSample {
	out := decisionSample{at: now, outcomes: map[string]float64{}}
	mfs, _ := r.Gatherer.Gather()
	for _, mf := range mfs {
		switch mf.GetName() {
		case "guardd_decision_requests_total":
			for _, m := range mf.GetMetric() {
				v := m.GetCounter().GetValue()
				out.total += v
				for _, l := range m.GetLabel() {
					if l.GetName() == "outcome" {
						out.outcomes[l.GetValue()] += v
					}
				}
			}
		case "guardd_challenge_shown_total", "guardd_challenge_passed_total":
			out.hasChallenge = true
			for _, m := range mf.GetMetric() {
				if mf.GetName() == "guardd_challenge_shown_total" {
					out.shown += m.GetCounter().GetValue()
				} else {
					out.passed += m.GetCounter().GetValue()
				}
			}
		case "guardd_decision_duration_seconds":
			for _, m := range mf.GetMetric() {
				h := m.GetHistogram()
				out.count = float64(h.GetSampleCount())
				out.bounds, out.buckets = bucketsOf(h)
			}
		}
	}
	return out
}

func bucketsOf(h *dto.Histogram) (bounds, counts []float64) {
	for _, b := range h.GetBucket() {
		bounds = append(bounds, b.GetUpperBound())
		counts = append(counts, float64(b.GetCumulativeCount()))
	}
	return bounds, counts
}

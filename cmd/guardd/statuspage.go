package main

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/guardd/guardd/report"
)

// statusPage serves the admin listener's /status: the live report page.
// Rates and latencies are over the interval since the previous load (the page
// reloads itself every 5 s), or since the start on the first.
type statusPage struct {
	d *daemon

	mu   sync.Mutex
	prev sample
}

type sample struct {
	at      time.Time
	total   float64   // decisions
	buckets []float64 // cumulative counts per upper bound
	bounds  []float64
	count   float64
}

func (s *statusPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d := s.d
	now := time.Now()
	st := &report.Status{Generated: now, Uptime: time.Since(d.started).Round(time.Second), Refresh: 5, TailLag: -1}
	st.Rules = len(d.pipes.Load().Rules().Rules())
	active := d.store.List(now)
	st.Active = len(active)
	st.ByRule, st.ByAction = report.Counts(active)
	if t := d.lastEvent.Load(); t != 0 {
		st.LastEvent = time.Unix(0, t).UTC()
		st.TailLag = max(now.Sub(st.LastEvent).Seconds(), 0)
	}
	if f := d.cfg.Load().Fleet; f != nil {
		node, _ := f.NodeName()
		st.Fleet = fmt.Sprintf("node %s, Redis %s at %s", node, or(f.Redis.Mode, "standalone"), strings.Join(f.Redis.Addresses, ", "))
	}
	cur := s.sample(now)
	s.mu.Lock()
	prev := s.prev
	if prev.at.IsZero() {
		prev = sample{at: d.started, buckets: make([]float64, len(cur.buckets))}
	}
	s.prev = cur
	s.mu.Unlock()
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
	st.P50, st.P99 = report.Quantile(cur.bounds, delta, n, 0.5), report.Quantile(cur.bounds, delta, n, 0.99)
	var b bytes.Buffer
	if err := report.WriteStatusHTML(&b, st); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b.Bytes())
}

// sample reads the decision counters from the registry.
func (s *statusPage) sample(now time.Time) sample {
	out := sample{at: now}
	mfs, _ := s.d.reg.Gather()
	for _, mf := range mfs {
		switch mf.GetName() {
		case "guardd_decision_requests_total":
			for _, m := range mf.GetMetric() {
				out.total += m.GetCounter().GetValue()
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

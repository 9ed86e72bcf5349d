package main

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/guardd/guardd/report"
)

// statusPage serves the admin listener's /status: the live report page.
// Rates and latencies are over the interval since the previous load (the page
// reloads itself every 5 s), or since the start on the first.
type statusPage struct {
	d     *daemon
	rates *report.DecisionRates
}

func (s *statusPage) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d := s.d
	now := time.Now()
	st := &report.Status{Generated: now, Uptime: time.Since(d.started).Round(time.Second), Refresh: 5, TailLag: -1}
	st.Rules = len(d.pipes.Load().Rules().Rules())
	active := d.store.List(now)
	st.Active = len(active)
	st.ByRule, st.ByAction = report.Counts(active)
	st.Keys = report.KeyKinds(active)
	if t := d.lastEvent.Load(); t != 0 {
		st.LastEvent = time.Unix(0, t).UTC()
		st.TailLag = max(now.Sub(st.LastEvent).Seconds(), 0)
	}
	if f := d.cfg.Load().Fleet; f != nil {
		node, _ := f.NodeName()
		st.Fleet = fmt.Sprintf("node %s, Redis %s at %s", node, or(f.Redis.Mode, "standalone"), strings.Join(f.Redis.Addresses, ", "))
	}
	s.rates.Fill(st, now)
	var b bytes.Buffer
	if err := report.WriteStatusHTML(&b, st); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b.Bytes())
}

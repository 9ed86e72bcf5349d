package main

import (
	"sync"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/counting"
	"github.com/guardd/guardd/rules"
	"github.com/guardd/guardd/rules/engine"
)

// requestCounter counts decide requests (decision.count) for the rules that
// read only what is known when a request arrives, and remembers each
// request's ID so that its log line counts only the other rules. It runs on
// the decision API's event loops, concurrently with the tailer: the engine's
// counters and mitigation records are safe for that.
type requestCounter struct {
	d    *daemon
	pool sync.Pool // *engine.Matches
}

// requestIDHeader carries nginx's $request_id on the auth subrequest.
const requestIDHeader = "x-request-id"

func (c *requestCounter) CountRequest(ev *characteristics.Event) {
	id, ok := ev.Header(requestIDHeader)
	if !ok || id == "" {
		return // left to its log line
	}
	p := c.d.pipe.Load()
	m, _ := c.pool.Get().(*engine.Matches)
	if m == nil {
		m = new(engine.Matches)
	}
	m.Reset()
	p.engine.Prepare(ev, m)
	rs := p.engine.Rules()
	items := m.Items[:0]
	for _, it := range m.Items {
		if it.Count && rs[it.Rule].RequestTime {
			// The mitigation records count what the log line applies to;
			// here only the counter moves.
			it.Mitigate = false
			items = append(items, it)
			c.d.m.matches.WithLabelValues(rs[it.Rule].Name).Inc()
		}
	}
	c.d.counted.Add(counting.HashString(id), ev.Time.UnixNano())
	if len(items) > 0 {
		p.engine.Apply(ev.Time, items, m.Keys)
	}
	c.pool.Put(m)
}

// skipCounted stops items, the matches of a log line, from counting again
// the rules its request was counted for at decision time.
func (d *daemon) skipCounted(ev *characteristics.Event, rs []*rules.Rule, items []engine.Match) {
	id, ok := ev.Var("request_id")
	if !ok || id == "" || id == "-" || !d.counted.Take(counting.HashString(id), time.Now().UnixNano()) {
		return
	}
	for i := range items {
		if rs[items[i].Rule].RequestTime {
			items[i].Count = false
		}
	}
}

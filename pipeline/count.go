package pipeline

import (
	"log/slog"
	"sync"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/counting"
	"github.com/guardd/guardd/rules/engine"
)

// RequestIDHeader carries nginx's $request_id on the auth subrequest.
const RequestIDHeader = "x-request-id"

// RequestCounter counts decide requests (decision.count) for the rules that
// read only what is known when a request arrives, and remembers each
// request's ID in Seen so that Run, meeting its log line, counts only the
// other rules. It runs on the decision API's event loops, concurrently with
// Run: the engine's counters are safe for that. Trips go to the store as
// Run's do.
type RequestCounter struct {
	Pipelines *Holder
	Seen      *counting.Seen
	Store     Store
	Metrics   *Metrics
	Logger    *slog.Logger     // nil: discard
	Now       func() time.Time // nil: time.Now

	pool    sync.Pool // *engine.Matches
	once    sync.Once
	tripper *tripper
}

// CountRequest counts ev, a request the decision API is deciding.
func (c *RequestCounter) CountRequest(ev *characteristics.Event) {
	id, ok := ev.Header(RequestIDHeader)
	if !ok || id == "" {
		return // left to its log line
	}
	p := c.Pipelines.Acquire()
	if p == nil {
		return
	}
	defer p.Release()
	m, _ := c.pool.Get().(*engine.Matches)
	if m == nil {
		m = new(engine.Matches)
	}
	defer c.pool.Put(m)
	m.Reset()
	m.CountOnly = true // nothing here reads what mitigation expressions matched
	p.engine.Prepare(ev, m)
	rs := p.engine.Rules()
	items := m.Items[:0]
	for _, it := range m.Items {
		if rs[it.Rule].RequestTime {
			// The mitigation applies to the request through the store
			// lookup that follows; here only the counter moves.
			it.Mitigate = false
			items = append(items, it)
			if c.Metrics != nil {
				c.Metrics.Matches.WithLabelValues(rs[it.Rule].Name).Inc()
			}
		}
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	wall := now()
	c.Seen.Add(counting.HashString(id)|1, ev.Time.UnixNano())
	if len(items) == 0 {
		return
	}
	trips := p.engine.Apply(ev.Time, items, m.Keys, nil)
	if len(trips) == 0 {
		return
	}
	c.once.Do(func() { c.tripper = newTripper(c.Store, nil, c.Metrics, c.Logger) })
	for i := range trips {
		c.tripper.trip(p, &trips[i], wall)
	}
}

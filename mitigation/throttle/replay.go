package throttle

import (
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/rules"
)

// Count is one rate rule's count of one request, for a replay: Decide split
// in two, so that the keys can be worked out in parallel (Counts) and the
// requests admitted or refused in the log's order (Admit).
type Count struct {
	lr  *limitRule
	key uint64
	n   float64
	// Refused is set by Admit: the rule refused the request (a shadow rule:
	// would have refused it).
	Refused bool
}

// Rule is the throttle rule of c.
func (c *Count) Rule() *rules.Rule { return c.lr.rule }

// Shadow reports whether c's rule is in shadow mode (its own shadow: true,
// or Config.Shadow): it would refuse, never does.
func (c *Count) Shadow() bool { return c.lr.shadow }

// Replayable reports whether rs has rules Counts counts: rate limits.
// Concurrency rules need the requests in flight, which a log does not
// tell, and shedding needs the upstream's live signals: neither is replayed.
func (rs *Rules) Replayable() bool {
	if rs == nil {
		return false
	}
	for i := range rs.rules {
		if rs.rules[i].conc == 0 {
			return true
		}
	}
	return false
}

// Concurrency returns the names of rs's concurrency rules (not replayed).
func (rs *Rules) Concurrency() []string {
	var out []string
	for i := range rs.rules {
		if rs.rules[i].conc > 0 {
			out = append(out, rs.rules[i].rule.Name)
		}
	}
	return out
}

// Counts appends to out the counts ev makes on rs's rate rules whose count
// expression holds in m (the Matches of rs.Set().Eval(ev)), keyed as Decide
// keys them. buf is scratch space, returned grown. It reads no counter and
// is safe for concurrent use.
func (rs *Rules) Counts(ev *characteristics.Event, m *rules.Matches, buf []byte, out []Count) ([]Count, []byte) {
	for i := range rs.rules {
		lr := &rs.rules[i]
		if lr.conc > 0 || !m.Count(lr.index) {
			continue
		}
		key, n, ok, b := lr.key(ev, buf)
		buf = b
		if ok {
			out = append(out, Count{lr: lr, key: key, n: n})
		}
	}
	return out, buf
}

// Admit counts one request's counts (from one Counts call) at now, the
// request's time, on the rules' counters, as Decide does: all are counted,
// each Count's Refused says what its rule said, and the verdict is the most
// restrictive enforced rule's. Shadow rules are counted and judged but
// never refuse. Unlike Decide it adds no jitter (a replay gives the same
// answer every time), updates no metric and logs nothing. Calls come in the
// requests' order (the log's), from one goroutine at a time, so the answer
// does not depend on scheduling.
func (rs *Rules) Admit(cs []Count, now time.Time) Verdict {
	var v Verdict
	var best float64
	t := now.UnixNano()
	for i := range cs {
		c := &cs[i]
		res := c.lr.counter.Admit(c.key, c.n, t)
		c.Refused = res.Exceeded
		if c.lr.shadow {
			continue
		}
		v.take(c.lr, res, res.RetryAfter, &best)
	}
	return v
}

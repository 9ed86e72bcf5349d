package redis

import "github.com/guardd/guardd/counting"

// Windows is a rule with several windows counted fleet-wide: one Counter
// per window, each under its own name ("<rule>/<period>"), judged as
// counting.Windows judges its tables (the first window exceeded, else the
// one closest to its limit). Like each Counter, it never waits on the
// network.
type Windows struct {
	cs []*Counter
}

// NewWindows combines the counters of one rule's windows, in the rule's
// order.
func NewWindows(cs ...*Counter) *Windows { return &Windows{cs: cs} }

// Add counts an event of size n for key in every window and returns the
// result of the window that judges it.
func (w *Windows) Add(key uint64, n float64, now int64) counting.Result {
	var best counting.Result
	var bestLim float64
	for i, c := range w.cs {
		r := c.Add(key, n, now)
		if lim := c.p.limit; i == 0 || counting.Better(r, best, lim, bestLim) {
			best, bestLim = r, lim
		}
	}
	return best
}

// Counters returns the windows' counters.
func (w *Windows) Counters() []*Counter { return w.cs }

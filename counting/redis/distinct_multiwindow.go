package redis

import "github.com/guardd/guardd/counting"

// DistinctWindows is a distinct rule with several windows counted
// fleet-wide: one DistinctCounter per window, judged as counting.Windows
// judges them (the first window exceeded, else the one closest to its
// limit).
type DistinctWindows struct {
	cs []*DistinctCounter
}

// NewDistinctWindows combines the counters of one rule's windows, in the
// rule's order.
func NewDistinctWindows(cs ...*DistinctCounter) *DistinctWindows {
	return &DistinctWindows{cs: cs}
}

// AddDistinct adds value to key in every window and returns the result of
// the window that judges it.
func (w *DistinctWindows) AddDistinct(key, value uint64, now int64) counting.Result {
	var best counting.Result
	var bestLim float64
	for i, c := range w.cs {
		r := c.AddDistinct(key, value, now)
		if lim := c.local.Limit(); i == 0 || counting.Better(r, best, lim, bestLim) {
			best, bestLim = r, lim
		}
	}
	return best
}

// Counters returns the windows' counters.
func (w *DistinctWindows) Counters() []*DistinctCounter { return w.cs }

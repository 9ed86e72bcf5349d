package counting

import (
	"fmt"
	"time"
)

// Window is one limit of a rule with several: Requests per Period.
type Window struct {
	Period   time.Duration
	Requests float64
}

// Windows applies several limits to the same keys, so that a rule can catch
// both a burst (20 in five minutes) and a low-and-slow client (10 in an
// hour) with one counting expression. Each window has its own table; an
// event is added to every one, and the result is that of the first window
// it exceeds, or else of the window closest to its limit. With Distinct set
// the windows count distinct values (AddDistinct) rather than events (Add).
type Windows struct {
	tables   []*Table
	distinct []*Distinct
}

// NewWindows builds one table per window under algorithm alg (ignored for
// distinct counting). maxKeys caps each table as Config.MaxKeys does.
func NewWindows(alg Algorithm, windows []Window, distinct bool, maxKeys int) (*Windows, error) {
	if len(windows) == 0 {
		return nil, fmt.Errorf("counting: windows: none given")
	}
	w := &Windows{}
	for i, win := range windows {
		if distinct {
			d, err := NewDistinct(DistinctConfig{Period: win.Period, Limit: win.Requests, MaxKeys: maxKeys})
			if err != nil {
				return nil, fmt.Errorf("counting: window %d: %w", i, err)
			}
			w.distinct = append(w.distinct, d)
			continue
		}
		t, err := NewTable(Config{Limit: Limit{Algorithm: alg, Period: win.Period, Requests: win.Requests}, MaxKeys: maxKeys})
		if err != nil {
			return nil, fmt.Errorf("counting: window %d: %w", i, err)
		}
		w.tables = append(w.tables, t)
	}
	return w, nil
}

// Add adds an event of size n for key to every window. For distinct
// windows it is a Peek of the first.
func (w *Windows) Add(key uint64, n float64, now int64) Result {
	if len(w.tables) == 0 {
		return w.distinct[0].Peek(key, now)
	}
	var best Result
	var bestLim float64
	for i, t := range w.tables {
		r := t.Add(key, n, now)
		if i == 0 || better(r, best, t.requests, bestLim) {
			best, bestLim = r, t.requests
		}
	}
	return best
}

// AddDistinct adds value to key's distinct count in every window. For
// event windows it is an Add of 1.
func (w *Windows) AddDistinct(key, value uint64, now int64) Result {
	if len(w.distinct) == 0 {
		return w.Add(key, 1, now)
	}
	var best Result
	var bestLim float64
	for i, d := range w.distinct {
		r := d.Add(key, value, now)
		if i == 0 || better(r, best, d.limit, bestLim) {
			best, bestLim = r, d.limit
		}
	}
	return best
}

// Distinct returns the table of w's one window when w counts distinct
// values in one window, and nil otherwise: its Add is w's AddDistinct.
func (w *Windows) Distinct() *Distinct {
	if len(w.distinct) != 1 {
		return nil
	}
	return w.distinct[0]
}

// better says whether r (limit lim) replaces best (limit bestLim): an
// exceeded result beats one that is not, the first exceeded window is kept,
// and otherwise the higher share of its limit wins.
func better(r, best Result, lim, bestLim float64) bool {
	if r.Exceeded != best.Exceeded {
		return r.Exceeded
	}
	if best.Exceeded {
		return false
	}
	return r.Count/lim > best.Count/bestLim
}

// Sweep drops idle keys from every window and returns how many it dropped.
func (w *Windows) Sweep(now int64) int {
	n := 0
	for _, t := range w.tables {
		n += t.Sweep(now)
	}
	for _, d := range w.distinct {
		n += d.Sweep(now)
	}
	return n
}

// Len returns the keys tracked over all windows.
func (w *Windows) Len() int {
	n := 0
	for _, t := range w.tables {
		n += t.Len()
	}
	for _, d := range w.distinct {
		n += d.Len()
	}
	return n
}

// Evictions returns the evictions over all windows.
func (w *Windows) Evictions() uint64 {
	var n uint64
	for _, t := range w.tables {
		n += t.Evictions()
	}
	for _, d := range w.distinct {
		n += d.Evictions()
	}
	return n
}

package engine

import (
	"fmt"
	"time"

	"github.com/guardd/guardd/counting"
	"github.com/guardd/guardd/rules"
)

// newRegular makes rule i's timing gate when the rule has regularity: in
// its metadata: a pause longer than the rule's longest period starts a
// key's intervals over.
func (e *Engine) newRegular(i int, r *rules.Rule, maxKeys int) error {
	if r.Regularity == nil {
		return nil
	}
	var gap time.Duration
	for _, w := range r.Windows {
		gap = max(gap, w.Period)
	}
	g, err := counting.NewRegularity(counting.RegularityConfig{Gap: gap, MinEvents: r.Regularity.MinEvents,
		MaxCV: r.Regularity.MaxCV, MaxKeys: maxKeys})
	if err != nil {
		return fmt.Errorf("engine: rule %s: %w", r.Name, err)
	}
	if e.regular == nil {
		e.regular = make([]*counting.Regularity, len(e.rules))
	}
	e.regular[i] = g
	return nil
}

// timing records a counted event of a rule with a timing gate, and lets
// the rule trip only when the key's intervals are machine-regular: the
// statistic is computed only for a key over its limit.
func (e *Engine) timing(it *Match, now int64, res *counting.Result) {
	if g := e.regular[it.Rule]; g != nil {
		res.Exceeded = g.Add(it.Key, now, res.Exceeded)
	}
}

// Timing returns rule i's timing of key at t: how regular its counted
// events are; ok is false when the rule has no regularity: or the key no
// recent run.
func (e *Engine) Timing(i int, key uint64, t time.Time) (tm counting.Timing, ok bool) {
	if e.regular == nil || e.regular[i] == nil {
		return counting.Timing{}, false
	}
	return e.regular[i].Peek(key, t.UnixNano())
}

// regularKeys sweeps the timing gates' idle keys when now is set, and
// returns how many keys they track and evicted.
func (e *Engine) regularKeys(now int64) (keys int, evictions uint64) {
	for _, g := range e.regular {
		if g == nil {
			continue
		}
		if now != 0 {
			g.Sweep(now)
		}
		keys += g.Len()
		evictions += g.Evictions()
	}
	return keys, evictions
}

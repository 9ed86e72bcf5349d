package rules

import (
	"encoding/json"
	"maps"
	"math"
	"slices"

	"github.com/guardd/guardd/action"
	"github.com/guardd/guardd/counting"
)

// Regularity is a rule's regularity: metadata: the rule trips only when the
// key is over its limit AND the intervals between the key's counted events
// are machine-regular (counting.Regularity judges them).
type Regularity struct {
	// MinEvents is how many counted events in a run (no pause longer than
	// the rule's longest period) a key needs before it can be judged:
	// 3 to counting.RegularityIntervals+1.
	MinEvents int
	// MaxCV is the highest coefficient of variation (standard deviation
	// over mean, trimmed: counting.IntervalCV) of the key's intervals
	// judged machine-regular, in (0, 1].
	MaxCV float64
}

// regularity reads regularity: {min_events: N, max_cv: X}.
func (mr metaReader) regularity(custom map[string]any, r *Rule) *Regularity {
	v, ok := custom["regularity"]
	if !ok {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		mr.fail("regularity", "got %v; want {min_events: <3 to %d>, max_cv: <number in (0, 1]>}", v, counting.RegularityIntervals+1)
		return nil
	}
	n := len(*mr.errs)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k != "min_events" && k != "max_cv" {
			mr.fail("regularity", "unknown key %q; accepted: min_events, max_cv", k)
		}
	}
	g := &Regularity{}
	if e, ok := metaFloat(m["min_events"]); !ok || e != math.Trunc(e) || e < 3 || e > counting.RegularityIntervals+1 {
		mr.fail("regularity", "min_events %v; want a whole number of events from 3 to %d (the intervals a key keeps, plus one)", m["min_events"], counting.RegularityIntervals+1)
	} else {
		g.MinEvents = int(e)
	}
	if c, ok := metaFloat(m["max_cv"]); !ok || !(c > 0 && c <= 1) {
		mr.fail("regularity", "max_cv %v; want a coefficient of variation > 0 and <= 1, e.g. 0.2", m["max_cv"])
	} else {
		g.MaxCV = c
	}
	if r.Action == action.Throttle {
		mr.fail("regularity", "not for action throttle: a throttle rule admits or refuses each request on its count")
	}
	if len(*mr.errs) > n {
		return nil
	}
	return g
}

// metaFloat reads a YAML number.
func metaFloat(v any) (float64, bool) {
	switch v := v.(type) {
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case uint64:
		return float64(v), true
	case float64:
		return v, !math.IsNaN(v)
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	}
	return 0, false
}

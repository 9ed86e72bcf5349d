package redis

import (
	"context"
	"testing"
	"time"

	"github.com/guardd/guardd/counting"
)

// checkWindowsFleet: three nodes count one key of a rule with two windows
// (100 a minute, 10 an hour), three events each: no node is over either
// limit alone. Once every node has flushed, the hour window holds the
// fleet's nine, and the next events of one node trip it, as one node that
// saw them all would; the minute window alone would not have.
func checkWindowsFleet(t *testing.T, fleets []*Fleet, now func() int64) {
	t.Helper()
	ctx := context.Background()
	var ws []*Windows
	for _, f := range fleets {
		var cs []*Counter
		for _, w := range []counting.Window{{Period: time.Minute, Requests: 100}, {Period: time.Hour, Requests: 10}} {
			c, err := f.Counter(Rule{Name: "two/" + w.Period.String(), Limit: counting.Limit{Period: w.Period, Requests: w.Requests}, Detection: true})
			if err != nil {
				t.Fatal(err)
			}
			cs = append(cs, c)
		}
		ws = append(ws, NewWindows(cs...))
	}
	const key = 0xbeef
	for i, w := range ws {
		for range 3 {
			if r := w.Add(key, 1, now()); r.Exceeded {
				t.Fatalf("node %d over a limit alone: %+v (the test's premise)", i, r)
			}
		}
	}
	for _, f := range fleets {
		f.Flush(ctx)
	}
	// Node 0 learns the fleet's count at its next flush after it uses
	// the key again (as TestDetection): the tenth event, a flush, the
	// eleventh.
	if r := ws[0].Add(key, 1, now()); r.Exceeded {
		t.Errorf("10 events fleet-wide against 10 an hour: %+v", r)
	}
	fleets[0].Flush(ctx)
	if r := ws[0].Add(key, 1, now()); !r.Exceeded || r.Count < 11 {
		t.Errorf("11 events fleet-wide against 10 an hour: %+v", r)
	}
	if r := ws[0].Counters()[0].Add(key, 0, now()); r.Exceeded {
		t.Errorf("the minute window (100) is exceeded: %+v", r)
	}
}

// TestWindowsFleet: checkWindowsFleet on an in-process store.
func TestWindowsFleet(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 10, 0, time.UTC)
	store := newFakeStore(t0)
	var fleets []*Fleet
	for _, n := range []string{"a", "b", "c"} {
		f, err := New(Config{Node: n, Now: func() time.Time { return t0 }}, store, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		fleets = append(fleets, f)
	}
	checkWindowsFleet(t, fleets, func() int64 { return t0.UnixNano() })
}

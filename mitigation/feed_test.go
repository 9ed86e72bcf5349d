package mitigation

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func ids(ms []Mitigation) []uint64 {
	out := make([]uint64, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

func TestChanges(t *testing.T) {
	s := newStore(t, Config{})
	_, c0 := s.Snapshot(t0)
	if _, _, cur, ok := s.Changes(c0); !ok || cur != c0 {
		t.Fatalf("Changes(initial cursor) = %d %v, want %d true", cur, ok, c0)
	}
	a := mustAdd(t, s, mit("r", ActionBlock, ipScope("192.0.2.1"), 10*time.Minute), t0)
	b := mustAdd(t, s, mit("r", ActionBlock, ipScope("192.0.2.2"), 10*time.Minute), t0)
	_, c1 := s.Snapshot(t0)
	mustAdd(t, s, mit("r", ActionBlock, ipScope("192.0.2.1"), 20*time.Minute), t0) // extends a
	_, c2 := s.Snapshot(t0)
	s.Delete(b.ID)
	_, c3 := s.Snapshot(t0)
	c := mustAdd(t, s, mit("r", ActionBlock, ipScope("192.0.2.3"), time.Minute), t0)
	s.Delete(c.ID)
	_, c4 := s.Snapshot(t0)
	s.Expire(t0.Add(30 * time.Minute)) // a expires
	_, c5 := s.Snapshot(t0)

	for _, tc := range []struct {
		name               string
		since              uint64
		wantAdded, wantDel []uint64
		wantExpires        time.Duration // of the single added one
		wantOK             bool
		wantCursor         uint64
	}{
		{"two adds", c0, nil, nil, 0, true, c5}, // everything since c0 was created and removed again
		{"extension", c1, nil, []uint64{b.ID, a.ID}, 0, true, c5},
		{"delete", c2, nil, []uint64{b.ID, a.ID}, 0, true, c5},
		{"add and delete coalesce", c3, nil, []uint64{a.ID}, 0, true, c5},
		{"expire", c4, nil, []uint64{a.ID}, 0, true, c5},
		{"up to date", c5, nil, nil, 0, true, c5},
		{"future cursor", c5 + 1, nil, nil, 0, false, c5},
		{"zero cursor", 0, nil, nil, 0, false, c5},
		{"cursor before this process", c0 - 1, nil, nil, 0, false, c5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			added, deleted, cur, ok := s.Changes(tc.since)
			if ok != tc.wantOK || cur != tc.wantCursor {
				t.Fatalf("Changes(%d) cursor %d ok %v, want %d %v", tc.since, cur, ok, tc.wantCursor, tc.wantOK)
			}
			if !slices.Equal(ids(added), tc.wantAdded) || !slices.Equal(ids(deleted), tc.wantDel) {
				t.Errorf("Changes(%d) added %v deleted %v, want %v %v", tc.since, ids(added), ids(deleted), tc.wantAdded, tc.wantDel)
			}
		})
	}

	// Windows that end before the removals, replayed on a fresh store.
	s2 := newStore(t, Config{})
	_, d0 := s2.Snapshot(t0)
	a2 := mustAdd(t, s2, mit("r", ActionBlock, ipScope("192.0.2.1"), 10*time.Minute), t0)
	b2 := mustAdd(t, s2, mit("r", ActionRateLimit, ipScope("192.0.2.2"), 10*time.Minute), t0)
	_, d1 := s2.Snapshot(t0)
	mustAdd(t, s2, mit("r", ActionBlock, ipScope("192.0.2.1"), 20*time.Minute), t0)
	added, deleted, _, ok := s2.Changes(d0)
	if !ok || !slices.Equal(ids(added), []uint64{b2.ID, a2.ID}) || len(deleted) != 0 {
		t.Fatalf("Changes(d0) = %v %v %v, want [b a] (a last: its extension is the latest change)", ids(added), ids(deleted), ok)
	}
	if !added[1].Expires.Equal(t0.Add(20 * time.Minute)) {
		t.Errorf("added a expires %s, want the extended expiry", added[1].Expires)
	}
	added, _, _, _ = s2.Changes(d1)
	if !slices.Equal(ids(added), []uint64{a2.ID}) || !added[0].Expires.Equal(t0.Add(20*time.Minute)) {
		t.Errorf("Changes(d1) added %v, want the extension of a", ids(added))
	}
}

// TestChangesReplay checks the contract: applying a window's changes to the
// state at its start gives the state at its end, for every start.
func TestChangesReplay(t *testing.T) {
	s := newStore(t, Config{MaxEntries: 4})
	type point struct {
		cursor uint64
		state  []Mitigation
	}
	var points []point
	snap := func(now time.Time) {
		l, c := s.Snapshot(now)
		points = append(points, point{c, l})
	}
	now := t0
	snap(now)
	for i := range 40 {
		now = now.Add(10 * time.Second)
		sc := ipScope("192.0.2." + string(rune('0'+i%7)))
		m, _, err := s.Add(Mitigation{Rule: "r" + string(rune('a'+i%3)), Action: Action(i % 5), Scope: sc, Expires: now.Add(time.Duration(i%4+1) * 20 * time.Second)}, now)
		if err != nil {
			t.Fatal(err)
		}
		if i%5 == 0 {
			s.Delete(m.ID)
		}
		if i%3 == 0 {
			s.Expire(now)
		}
		s.Expire(now) // the state compared is what Snapshot lists at now
		snap(now)
	}
	end := points[len(points)-1]
	for _, p := range points {
		added, deleted, cur, ok := s.Changes(p.cursor)
		if !ok || cur != end.cursor {
			t.Fatalf("Changes(%d) = cursor %d ok %v", p.cursor, cur, ok)
		}
		state := map[uint64]Mitigation{}
		for _, m := range p.state {
			state[m.ID] = m
		}
		for _, m := range added {
			state[m.ID] = m
		}
		for _, m := range deleted {
			if _, ok := state[m.ID]; !ok {
				t.Errorf("from %d: deleted %d, which the consumer never had", p.cursor, m.ID)
			}
			delete(state, m.ID)
		}
		if len(state) != len(end.state) {
			t.Fatalf("from %d: replay gives %d mitigations, want %d", p.cursor, len(state), len(end.state))
		}
		for _, m := range end.state {
			if got, ok := state[m.ID]; !ok || !got.Expires.Equal(m.Expires) || got.Action != m.Action {
				t.Errorf("from %d: mitigation %d = %+v, want %+v", p.cursor, m.ID, got, m)
			}
		}
	}
}

func TestChangesHistoryOverflow(t *testing.T) {
	s := newStore(t, Config{History: 4})
	_, c0 := s.Snapshot(t0)
	for i := range 11 { // wraps the ring of 4 twice
		mustAdd(t, s, mit("r", ActionBlock, ipScope(fmt.Sprintf("192.0.2.%d", i+1)), time.Minute), t0)
	}
	_, cur := s.Snapshot(t0)
	for _, tc := range []struct {
		name   string
		since  uint64
		wantOK bool
		wantN  int
	}{
		{"overflowed", c0, false, 0},
		{"oldest retained", cur - 4, true, 4},
		{"one too old", cur - 5, false, 0},
		{"latest", cur - 1, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			added, _, got, ok := s.Changes(tc.since)
			if ok && added[len(added)-1].Scope[0].Value != "192.0.2.11" {
				t.Errorf("last added = %s, want the 11th", added[len(added)-1].Scope)
			}
			if ok != tc.wantOK || got != cur || len(added) != tc.wantN {
				t.Errorf("Changes(cur-%d) = %d added, cursor %d, ok %v; want %d, %d, %v", cur-tc.since, len(added), got, ok, tc.wantN, cur, tc.wantOK)
			}
		})
	}
}

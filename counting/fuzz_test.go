package counting

import (
	"math"
	"slices"
	"testing"
	"time"
)

// refLog is an exact, unbounded sliding log judged like SlidingLog: at the
// later of now and the key's newest event, ignoring events older than the
// period before that.
type refLog map[uint64][]int64

func (l refLog) add(key uint64, now, period int64) float64 {
	q := l[key]
	ref := now
	if len(q) > 0 && q[len(q)-1] > ref {
		ref = q[len(q)-1]
	}
	if now > ref-period {
		i, _ := slices.BinarySearch(q, now+1)
		q = slices.Insert(q, i, now)
		l[key] = q
	}
	n := 0
	for _, at := range q {
		if at > ref-period {
			n++
		}
	}
	return float64(n)
}

// FuzzTable drives every algorithm with events decoded from the input (key,
// size, signed time step, so late events included) and checks the Result
// invariants, and that the capped SlidingLog decides exactly as an unbounded
// log for events of size 1.
func FuzzTable(f *testing.F) {
	f.Add([]byte{0, 1, 0, 10, 0, 1, 0, 10, 0, 1, 0, 10, 0, 1, 0, 10})
	f.Add([]byte{1, 1, 0, 0, 1, 1, 0xff, 0x00, 1, 1, 0x10, 0, 2, 200, 0x80, 0})
	f.Add([]byte{3, 0, 0, 1, 3, 255, 3, 232, 3, 1, 0xfc, 0x18})
	f.Fuzz(checkTable)
}

func checkTable(t *testing.T, in []byte) {
	const period = int64(time.Second)
	{
		if len(in) > 4*256 { // 256 events: enough to wrap windows and fill logs
			return
		}
		// 256 keys into tables capped at 64 keys: evictions included.
		// The sliding log is uncapped so that it can be compared with the
		// exact log.
		var tabs [numAlgorithms]*Table
		for a := range tabs {
			maxKeys := 64
			if Algorithm(a) == SlidingLog {
				maxKeys = 256
			}
			tab, err := NewTable(Config{Limit: Limit{Algorithm: Algorithm(a), Period: time.Duration(period), Requests: 3}, MaxKeys: maxKeys, Shards: 2})
			if err != nil {
				t.Fatal(err)
			}
			tabs[a] = tab
		}
		ref := refLog{}
		now := t0
		huge := false // counts may be +Inf from here on
		for ; len(in) >= 4; in = in[4:] {
			key := uint64(in[0])
			n := float64(in[1]) / 64 // 0 is a Peek; 64 is one event
			if in[1] == 255 {
				n = 1e308 // counts overflow to +Inf
				huge = true
			}
			now += int64(int16(uint16(in[2])<<8|uint16(in[3]))) * int64(time.Millisecond)
			for a, tab := range tabs {
				r := tab.Add(key, n, now)
				if r.Remaining < 0 || r.Count < 0 || r.Reset < 0 || math.IsNaN(r.Count) || (!huge && math.IsInf(r.Count, 0)) {
					t.Fatalf("%v: Add(%d, %v, %d) = %+v", Algorithm(a), key, n, now-t0, r)
				}
				if r.Exceeded != (r.RetryAfter > 0) {
					t.Fatalf("%v: Add(%d, %v, %d) = %+v: RetryAfter must be set exactly when Exceeded", Algorithm(a), key, n, now-t0, r)
				}
				if tab.Len() > 256 || Algorithm(a) != SlidingLog && tab.Len() > 64 {
					t.Fatalf("%v: Len() = %d", Algorithm(a), tab.Len())
				}
			}
			if n == 1 {
				exact := ref.add(key, now, period)
				r := tabs[SlidingLog].Peek(key, now)
				if got := r.Count > 3; got != (exact > 3) || r.Count < exact {
					t.Fatalf("sliding log at %d: count %v exceeded %v, exact log %v", now-t0, r.Count, r.Exceeded, exact)
				}
			} else if n > 0 {
				ref = refLog{} // sizes other than 1: exactness not claimed
				tabs[SlidingLog], _ = NewTable(Config{Limit: tabs[SlidingLog].Limit(), MaxKeys: 256, Shards: 2})
			}
		}
	}
}

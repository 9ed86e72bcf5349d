package counting

import (
	"math"
	"testing"
	"time"
)

// t0 is an event time aligned on 10 s windows, so offsets below read as
// positions inside windows.
const t0 = int64(1_700_000_000) * int64(time.Second)

// step is one call in a scripted test: an Add (n > 0) or a Peek (n == 0) at
// t0+at, and the fields of the Result it must return.
type step struct {
	name  string
	at    time.Duration
	n     float64
	count float64
	exc   bool
	rem   float64
	retry time.Duration
	reset time.Duration
	late  uint64 // Table.Late after the step
	keys  int    // Table.Len after the step
}

func runSteps(t *testing.T, lim Limit, steps []step) {
	t.Helper()
	tab, err := NewTable(Config{Limit: lim, MaxKeys: 16, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	const key = 42
	for _, s := range steps {
		var r Result
		now := t0 + int64(s.at)
		if s.n > 0 {
			r = tab.Add(key, s.n, now)
		} else {
			r = tab.Peek(key, now)
		}
		want := Result{Count: s.count, Exceeded: s.exc, Remaining: s.rem, RetryAfter: s.retry, Reset: s.reset}
		if !near(r, want) {
			t.Errorf("%s: %+v at %v:\n got %+v\nwant %+v", s.name, opName(s.n), s.at, r, want)
		}
		if got := tab.Late(); got != s.late {
			t.Errorf("%s: Late() = %d, want %d", s.name, got, s.late)
		}
		if got := tab.Len(); got != s.keys {
			t.Errorf("%s: Len() = %d, want %d", s.name, got, s.keys)
		}
	}
}

func opName(n float64) string {
	if n > 0 {
		return "add"
	}
	return "peek"
}

// near compares results allowing float rounding: 1e-6 on counts, 2 ns on
// durations.
func near(a, b Result) bool {
	f := func(x, y float64) bool { return math.Abs(x-y) <= 1e-6 }
	d := func(x, y time.Duration) bool { return max(x-y, y-x) <= 2 }
	return f(a.Count, b.Count) && a.Exceeded == b.Exceeded && f(a.Remaining, b.Remaining) &&
		d(a.RetryAfter, b.RetryAfter) && d(a.Reset, b.Reset)
}

const s = time.Second

func TestSlidingWindow(t *testing.T) {
	runSteps(t, Limit{Algorithm: SlidingWindow, Period: 10 * s, Requests: 4}, []step{
		{name: "first", at: 0, n: 1, count: 1, rem: 3, reset: 20 * s, keys: 1},
		{name: "second", at: 1 * s, n: 1, count: 2, rem: 2, reset: 19 * s, keys: 1},
		{name: "third", at: 2 * s, n: 1, count: 3, rem: 1, reset: 18 * s, keys: 1},
		{name: "at limit", at: 3 * s, n: 1, count: 4, rem: 0, reset: 17 * s, keys: 1},
		// Next window, 4 s in: 5*(10-4)/10 + 1 = 4 allows one more.
		{name: "over", at: 4 * s, n: 1, count: 5, exc: true, retry: 10 * s, reset: 16 * s, keys: 1},
		{name: "peek before retry", at: 13*s + 900*time.Millisecond, count: 5 * 6.1 / 10, exc: false, rem: 4 - 5*6.1/10, reset: 6100 * time.Millisecond, keys: 1},
		// Boundary: the previous window weighs 8/10.
		{name: "next window", at: 12 * s, n: 1, count: 5*0.8 + 1, exc: true, retry: 4 * s, reset: 18 * s, keys: 1},
		// A late event of the previous window counts there and is judged at
		// the start of the current window, where the previous weighs fully.
		{name: "late, previous window", at: 8 * s, n: 1, count: 6 + 1, exc: true, retry: 6666666667, reset: 20 * s, keys: 1},
		{name: "late, too old", at: -5 * s, n: 1, count: 7, exc: true, retry: 6666666667, reset: 20 * s, late: 1, keys: 1},
		{name: "peek mid window", at: 15 * s, count: 6*0.5 + 1, rem: 0, reset: 15 * s, late: 1, keys: 1},
		{name: "peek window after", at: 25 * s, count: 1 * 0.5, rem: 3.5, reset: 5 * s, late: 1, keys: 1},
		{name: "peek two windows after", at: 30 * s, count: 0, rem: 4, late: 1, keys: 1},
		{name: "expired resets", at: 41 * s, n: 1, count: 1, rem: 3, reset: 19 * s, late: 1, keys: 1},
	})
}

func TestFixedWindow(t *testing.T) {
	runSteps(t, Limit{Algorithm: FixedWindow, Period: 10 * s, Requests: 2}, []step{
		{name: "first", at: 0, n: 1, count: 1, rem: 1, reset: 10 * s, keys: 1},
		{name: "second", at: 5 * s, n: 1, count: 2, rem: 0, reset: 5 * s, keys: 1},
		{name: "over at the last nanosecond", at: 10*s - 1, n: 1, count: 3, exc: true, retry: 1, reset: 1, keys: 1},
		{name: "boundary resets", at: 10 * s, n: 1, count: 1, rem: 1, reset: 10 * s, keys: 1},
		{name: "late is ignored", at: 9 * s, n: 1, count: 1, rem: 1, reset: 10 * s, late: 1, keys: 1},
		{name: "score", at: 11 * s, n: 1.5, count: 2.5, exc: true, retry: 9 * s, reset: 9 * s, late: 1, keys: 1},
		{name: "peek next window", at: 25 * s, count: 0, rem: 2, late: 1, keys: 1},
	})
}

func TestSlidingLog(t *testing.T) {
	runSteps(t, Limit{Algorithm: SlidingLog, Period: 10 * s, Requests: 2}, []step{
		{name: "first", at: 0, n: 1, count: 1, rem: 1, reset: 10 * s, keys: 1},
		{name: "second", at: 1 * s, n: 1, count: 2, rem: 0, reset: 10 * s, keys: 1},
		// Allowed again when the event at 1 s leaves: at 11 s.
		{name: "over", at: 2 * s, n: 1, count: 3, exc: true, retry: 9 * s, reset: 10 * s, keys: 1},
		// The log holds 3 entries; the 0 s event merges into the 1 s one.
		{name: "full log merges", at: 3 * s, n: 1, count: 4, exc: true, retry: 9 * s, reset: 10 * s, keys: 1},
		// Exact count is 4 (0 s is out); the merged entry over-counts by one.
		{name: "merge over-counts", at: 10*s + 500*time.Millisecond, n: 1, count: 5, exc: true, retry: 2500 * time.Millisecond, reset: 10 * s, keys: 1},
		{name: "exact again", at: 12*s + 500*time.Millisecond, n: 1, count: 3, exc: true, retry: 8 * s, reset: 10 * s, keys: 1},
		{name: "late inside the period", at: 11 * s, n: 1, count: 4, exc: true, retry: 8500 * time.Millisecond, reset: 10 * s, keys: 1},
		{name: "late outside the period", at: 1 * s, n: 1, count: 4, exc: true, retry: 8500 * time.Millisecond, reset: 10 * s, late: 1, keys: 1},
		{name: "peek later", at: 21 * s, count: 1, rem: 1, reset: 1500 * time.Millisecond, late: 1, keys: 1},
		{name: "peek earlier is judged at the newest event", at: 5 * s, count: 4, exc: true, retry: 8500 * time.Millisecond, reset: 10 * s, late: 1, keys: 1},
		{name: "peek after expiry", at: 33 * s, count: 0, rem: 2, late: 1, keys: 1},
	})
}

func TestTokenBucket(t *testing.T) {
	runSteps(t, Limit{Algorithm: TokenBucket, Period: 10 * s, Requests: 2}, []step{
		{name: "first", at: 0, n: 1, count: 1, rem: 1, reset: 5 * s, keys: 1},
		{name: "empties", at: 0, n: 1, count: 2, rem: 0, reset: 10 * s, keys: 1},
		{name: "refused", at: 1 * s, n: 1, count: 1.8, rem: 0.2, exc: true, retry: 4 * s, reset: 9 * s, keys: 1},
		{name: "late is judged at the last refill", at: 500 * time.Millisecond, n: 1, count: 1.8, rem: 0.2, exc: true, retry: 4 * s, reset: 9 * s, keys: 1},
		{name: "refilled", at: 6 * s, n: 1, count: 1.8, rem: 0.2, reset: 9 * s, keys: 1},
		{name: "above capacity never conforms", at: 6 * s, n: 3, count: 1.8, rem: 0.2, exc: true, retry: 9 * s, reset: 9 * s, keys: 1},
		{name: "peek", at: 10 * s, count: 1, rem: 1, reset: 5 * s, keys: 1},
		{name: "peek empty-ish", at: 7 * s, count: 1.6, rem: 0.4, exc: true, retry: 3 * s, reset: 8 * s, keys: 1},
		{name: "peek after expiry", at: 27 * s, count: 0, rem: 2, keys: 1},
	})
}

func TestGCRA(t *testing.T) {
	runSteps(t, Limit{Algorithm: GCRA, Period: 10 * s, Requests: 2}, []step{
		{name: "first", at: 0, n: 1, count: 1, rem: 1, reset: 5 * s, keys: 1},
		{name: "burst", at: 0, n: 1, count: 2, rem: 0, reset: 10 * s, keys: 1},
		{name: "refused", at: 1 * s, n: 1, count: 1.8, rem: 0.2, exc: true, retry: 4 * s, reset: 9 * s, keys: 1},
		{name: "late is judged at its own time", at: 500 * time.Millisecond, n: 1, count: 1.9, rem: 0.1, exc: true, retry: 4500 * time.Millisecond, reset: 9500 * time.Millisecond, keys: 1},
		{name: "conforms", at: 6 * s, n: 1, count: 1.8, rem: 0.2, reset: 9 * s, keys: 1},
		{name: "above burst never conforms", at: 6 * s, n: 3, count: 1.8, rem: 0.2, exc: true, retry: 9 * s, reset: 9 * s, keys: 1},
		{name: "peek", at: 10 * s, count: 1, rem: 1, reset: 5 * s, keys: 1},
		{name: "peek refused", at: 7 * s, count: 1.6, rem: 0.4, exc: true, retry: 3 * s, reset: 8 * s, keys: 1},
		{name: "peek after expiry", at: 36 * s, count: 0, rem: 2, keys: 1},
	})
}

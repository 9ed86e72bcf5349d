package counting

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
	"unsafe"
)

func newDistinct(t testing.TB, period time.Duration, limit float64, maxKeys int) *Distinct {
	t.Helper()
	d, err := NewDistinct(DistinctConfig{Period: period, Limit: limit, MaxKeys: maxKeys})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDistinctSlotSize(t *testing.T) {
	if n := unsafe.Sizeof(entry[dslot]{}); n != DistinctSlotBytes {
		t.Fatalf("a key and its dslot are %d bytes, DistinctSlotBytes says %d", n, DistinctSlotBytes)
	}
}

func TestNewDistinctRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  DistinctConfig
	}{
		{"no period", DistinctConfig{Limit: 1}},
		{"no limit", DistinctConfig{Period: time.Minute}},
		{"NaN limit", DistinctConfig{Period: time.Minute, Limit: math.NaN()}},
		{"negative keys", DistinctConfig{Period: time.Minute, Limit: 1, MaxKeys: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewDistinct(tc.cfg); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

// TestDistinctAccuracy measures the estimate against the true number of
// distinct values, within one window, over many keys.
func TestDistinctAccuracy(t *testing.T) {
	d := newDistinct(t, time.Hour, 1e9, 0)
	for _, n := range []int{1, 2, 5, 10, 20, 50, 100, 200, 1000, 10000} {
		keys := 200
		if n >= 1000 {
			keys = 20
		}
		var sumErr, worst float64
		for k := range keys {
			key := HashString("k" + strconv.Itoa(n) + "/" + strconv.Itoa(k))
			var r Result
			for v := range n {
				// every value twice: repeats must not count
				r = d.Add(key, HashString(strconv.Itoa(k)+"/"+strconv.Itoa(v)), 0)
				r = d.Add(key, HashString(strconv.Itoa(k)+"/"+strconv.Itoa(v)), 0)
			}
			e := math.Abs(r.Count-float64(n)) / float64(n)
			sumErr += e
			worst = max(worst, e)
		}
		mean := sumErr / float64(keys)
		t.Logf("n=%5d mean relative error %.3f, worst %.3f", n, mean, worst)
		limit := 0.0 // exact while a window holds its values
		if n > sparseMax {
			limit = 0.09
		}
		if mean > limit {
			t.Errorf("n=%d: mean relative error %.3f over %.2f", n, mean, limit)
		}
	}
}

func TestDistinctSmallCountsExact(t *testing.T) {
	// Below a dozen values linear counting rounds to the truth for almost
	// every key; thresholds of rules sit there.
	d := newDistinct(t, time.Minute, 5, 0)
	off := 0
	for k := range 1000 {
		key := uint64(k + 1)
		var r Result
		for v := range 5 {
			r = d.Add(key, uint64(k*100+v), 0)
		}
		if math.Round(r.Count) != 5 {
			off++
		}
		if r.Exceeded {
			t.Fatalf("key %d: 5 values exceed a limit of 5 (count %v)", k, r.Count)
		}
	}
	if off > 50 {
		t.Errorf("%d of 1000 keys did not estimate 5 values as 5", off)
	}
}

func TestDistinctSlides(t *testing.T) {
	p := time.Minute
	d := newDistinct(t, p, 8, 0)
	key := uint64(42)
	start := int64(10 * p) // aligned
	for v := range 10 {
		d.Add(key, uint64(v), start+int64(v)*int64(time.Second))
	}
	if r := d.Peek(key, start+int64(30*time.Second)); !r.Exceeded || math.Round(r.Count) != 10 {
		t.Fatalf("in the window: %+v, want 10 exceeded", r)
	}
	// Half way through the next window the old values weigh one half.
	r := d.Peek(key, start+int64(p)+int64(p)/2)
	if math.Round(r.Count) != 5 || r.Exceeded {
		t.Fatalf("half a period later: %+v, want 5", r)
	}
	// The same values again count once.
	for v := range 10 {
		r = d.Add(key, uint64(v), start+int64(p)+int64(p)/2)
	}
	if math.Round(r.Count) != 10 {
		t.Fatalf("repeated values: %+v, want 10", r)
	}
	if r := d.Peek(key, start+int64(4*p)); r.Count != 0 || r.Exceeded {
		t.Fatalf("long after: %+v, want 0", r)
	}
	// A late value of the previous window counts; an older one is ignored.
	d.Add(key, 1000, start+int64(5*p))
	d.Add(key, 1001, start+int64(4*p)+1)
	d.Add(key, 1002, start+int64(2*p))
	if d.Late() != 1 {
		t.Fatalf("late = %d, want 1", d.Late())
	}
}

func TestDistinctBounded(t *testing.T) {
	d := newDistinct(t, time.Minute, 10, 8000) // 1000 keys
	heavy := uint64(7)
	for v := range 40 {
		d.Add(heavy, uint64(v), 0)
	}
	for k := range 100000 {
		d.Add(uint64(k+100), 1, 0)
	}
	if d.Len() > 1000 {
		t.Fatalf("len %d over the cap", d.Len())
	}
	if r := d.Peek(heavy, 0); !r.Exceeded {
		t.Fatalf("the heavy key was evicted by a flood of light ones: %+v", r)
	}
	if n := d.Sweep(int64(time.Hour)); n == 0 || d.Len() != 0 {
		t.Fatalf("sweep dropped %d, %d left", n, d.Len())
	}
}

func TestDistinctAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	d := newDistinct(t, time.Minute, 10, 8*4096)
	i := uint64(0)
	op := func() {
		i++
		d.Add(i%5000, i%37, int64(i)*int64(time.Millisecond))
	}
	for range 20000 {
		op()
	}
	if n := testing.AllocsPerRun(10000, op); n != 0 {
		t.Errorf("Add: %v allocs per run, want 0", n)
	}
}

func TestWindows(t *testing.T) {
	w, err := NewWindows(SlidingWindow, []Window{{5 * time.Minute, 20}, {time.Hour, 10}}, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Low and slow: one every five minutes stays under 20 per 5 minutes and
	// goes over 10 per hour on the eleventh.
	key := uint64(1)
	for k := range 11 {
		r := w.Add(key, 1, int64(k)*int64(5*time.Minute))
		if r.Exceeded != (k == 10) {
			t.Fatalf("try %d: exceeded %v (count %v)", k+1, r.Exceeded, r.Count)
		}
	}
	// A burst trips the short window first.
	w2, _ := NewWindows(SlidingWindow, []Window{{time.Minute, 5}, {time.Hour, 100}}, false, 0)
	for k := range 6 {
		r := w2.Add(key, 1, int64(k)*int64(time.Second))
		if r.Exceeded != (k == 5) {
			t.Fatalf("burst %d: exceeded %v", k+1, r.Exceeded)
		}
	}
	dw, _ := NewWindows(SlidingWindow, []Window{{time.Minute, 3}, {time.Hour, 5}}, true, 0)
	var r Result
	for v := range 6 { // one new value every 2 minutes: only the hour sees 6
		r = dw.AddDistinct(key, uint64(v), int64(v)*int64(2*time.Minute))
	}
	if !r.Exceeded {
		t.Fatalf("distinct over the hour window not exceeded: %+v", r)
	}
}

func BenchmarkDistinctAdd(b *testing.B) {
	d := newDistinct(b, time.Minute, 10, 8<<16)
	b.ReportAllocs()
	i := uint64(0)
	for b.Loop() {
		i++
		d.Add(i%50000, i%101, int64(i)*int64(time.Microsecond))
	}
}

// TestDistinctConcurrent adds from several goroutines (run with -race): the
// count of a shared key is the union of what they added.
func TestDistinctConcurrent(t *testing.T) {
	d := newDistinct(t, time.Minute, 1e6, 0)
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for v := range 1000 {
				d.Add(1, uint64(v%8+g*8), 0) // 8 values of its own per goroutine
				d.Add(uint64(2+g*1000+v), 1, 0)
			}
		}()
	}
	for range 4 {
		<-done
	}
	if r := d.Peek(1, 0); r.Count != 32 { // exact up to 32
		t.Fatalf("shared key: %v distinct values, want 32", r.Count)
	}
}

// TestDistinctCachedEstimate: the estimates a key keeps are those a full
// recomputation from its registers gives, after every Add of a sequence
// that repeats values, goes past the exact range, sends late values into
// the previous window and rotates windows: an Add that changes nothing
// may skip the estimate, and no Add that changes something does.
func TestDistinctCachedEstimate(t *testing.T) {
	for _, values := range []uint64{700, 30, 8} { // dense windows; exact ones, with late values new to the previous
		d := newDistinct(t, time.Minute, 1e9, 0)
		key := values
		rng := rand.New(rand.NewPCG(values, 1))
		now := int64(0)
		for i := range 20_000 {
			now += int64(time.Second) / 50 // ~12 minutes in all
			v := uint64(i) % values        // every value, then repeats
			if values < 100 {
				v = rng.Uint64N(values)
			}
			at := now
			if i%97 == 0 {
				at -= int64(time.Minute) // late: into the previous window
			}
			d.Add(key, v*0x9e3779b97f4a7c15, at)
			s := d.keys.For(key)
			j := s.Lookup(key)
			if j < 0 {
				t.Fatal("key lost")
			}
			got := *s.Val(j)
			want := got
			d.estimate(dkey{&want, s.Ext.block(&got)}) // estimate writes only the slot
			if got.cur != want.cur || got.uni != want.uni {
				t.Fatalf("%d values, Add %d (n %v): kept cur %v uni %v, recomputed %v %v", values, i, got.n, got.cur, got.uni, want.cur, want.uni)
			}
		}
	}
}

// TestWindowsDistinct: the table Windows.Distinct gives for one distinct
// window is the one AddDistinct counts in; several windows, or windows of
// events, have none.
func TestWindowsDistinct(t *testing.T) {
	w, err := NewWindows(SlidingWindow, []Window{{Period: time.Minute, Requests: 3}}, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	d := w.Distinct()
	if d == nil {
		t.Fatal("one distinct window: no table")
	}
	for v := range uint64(5) {
		if got, want := d.AddDistinct(1, v, 0), w.distinct[0].Peek(1, 0); got != want {
			t.Fatalf("value %d: %+v, Windows' table says %+v", v, got, want)
		}
	}
	if r := w.AddDistinct(1, 99, 0); r.Count != 6 {
		t.Fatalf("Windows.AddDistinct after the table's five values: %v, want 6", r.Count)
	}
	two, _ := NewWindows(SlidingWindow, []Window{{Period: time.Minute, Requests: 3}, {Period: time.Hour, Requests: 9}}, true, 0)
	events, _ := NewWindows(SlidingWindow, []Window{{Period: time.Minute, Requests: 3}}, false, 0)
	if two.Distinct() != nil || events.Distinct() != nil {
		t.Fatal("two windows, or windows of events, gave a table")
	}
}

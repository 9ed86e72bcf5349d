package counting

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"
	"unsafe"
)

func newRegularity(t testing.TB, gap time.Duration, minEvents int, maxCV float64, maxKeys int) *Regularity {
	t.Helper()
	r, err := NewRegularity(RegularityConfig{Gap: gap, MinEvents: minEvents, MaxCV: maxCV, MaxKeys: maxKeys})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRegularitySlotSize(t *testing.T) {
	if n := unsafe.Sizeof(entry[struct{}]{}) + unsafe.Sizeof(rslot{}); n != RegularitySlotBytes {
		t.Fatalf("a key and its rslot are %d bytes, RegularitySlotBytes says %d", n, RegularitySlotBytes)
	}
}

func TestNewRegularityRejects(t *testing.T) {
	ok := RegularityConfig{Gap: time.Minute, MinEvents: 20, MaxCV: 0.2}
	for _, tc := range []struct {
		name string
		edit func(*RegularityConfig)
	}{
		{"no gap", func(c *RegularityConfig) { c.Gap = 0 }},
		{"gap over MaxPeriod", func(c *RegularityConfig) { c.Gap = MaxPeriod + 1 }},
		{"two events", func(c *RegularityConfig) { c.MinEvents = 2 }},
		{"more events than the ring", func(c *RegularityConfig) { c.MinEvents = RegularityIntervals + 2 }},
		{"no cv", func(c *RegularityConfig) { c.MaxCV = 0 }},
		{"cv over 1", func(c *RegularityConfig) { c.MaxCV = 1.5 }},
		{"NaN cv", func(c *RegularityConfig) { c.MaxCV = math.NaN() }},
		{"negative keys", func(c *RegularityConfig) { c.MaxKeys = -1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			if _, err := NewRegularity(c); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	if _, err := NewRegularity(ok); err != nil {
		t.Fatal(err)
	}
}

// refCV is IntervalCV written the plain way: sort a copy, trim a sixteenth
// at each end (a sixteenth), two-pass variance, Sheppard's correction for whole seconds.
func refCV(iv []uint32) (mean, cv float64) {
	if len(iv) > RegularityIntervals {
		iv = iv[:RegularityIntervals]
	}
	if len(iv) < 2 {
		return 0, math.Inf(1)
	}
	v := make([]float64, len(iv))
	whole := true
	for i, x := range iv {
		v[i] = float64(x)
		whole = whole && x%1000 == 0
	}
	sort.Float64s(v)
	k := len(v) / 16
	v = v[k : len(v)-k]
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	if mean == 0 {
		return 0, math.Inf(1)
	}
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	variance := ss / float64(len(v))
	if whole {
		variance -= 1e6 / 12
	}
	return mean, math.Sqrt(max(variance, 0)) / mean
}

func repeat(ms uint32, n int) []uint32 {
	v := make([]uint32, n)
	for i := range v {
		v[i] = ms
	}
	return v
}

func TestIntervalCV(t *testing.T) {
	// A sleep(2) loop logged to the millisecond: 2 s plus a response time
	// of 50 to 250 ms.
	loopMS := make([]uint32, 32)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range loopMS {
		loopMS[i] = 2050 + uint32(rng.IntN(200))
	}
	// A loop of 2.5 s logged to the second: 2 s and 3 s in turn.
	loop25 := make([]uint32, 32)
	for i := range loop25 {
		loop25[i] = 2000 + 1000*uint32(i%2)
	}
	// A loop of 2.3 s logged to the second.
	loop23 := make([]uint32, 32)
	for i := range loop23 {
		loop23[i] = uint32((i+1)*2300/1000-i*2300/1000) * 1000
	}
	// People: reading times of 5 s to a minute and a half.
	person := make([]uint32, 32)
	for i := range person {
		person[i] = uint32(5000 + rng.IntN(90000))
	}
	// A person clicking through a gallery, one to three seconds a picture,
	// logged to the second.
	gallery := make([]uint32, 32)
	for i := range gallery {
		gallery[i] = 1000 * uint32(1+rng.IntN(3))
	}
	outlier := repeat(2000, 32)
	outlier[7], outlier[20] = 65000, 0 // a pause and a retry
	for _, tc := range []struct {
		name    string
		iv      []uint32
		regular bool // cv <= 0.2
		inf     bool
	}{
		{"none", nil, false, true},
		{"one", []uint32{2000}, false, true},
		{"constant", repeat(2000, 19), true, false},
		{"all at one instant", repeat(0, 32), false, true},
		{"sleep loop, ms", loopMS, true, false},
		{"2.5 s loop, s", loop25, true, false},
		{"2.3 s loop, s", loop23, true, false},
		{"a pause and a retry trimmed", outlier, true, false},
		{"people", person, false, false},
		{"gallery clicker", gallery, false, false},
		{"two speeds", append(repeat(2000, 16), repeat(6000, 16)...), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mean, cv := IntervalCV(tc.iv)
			rm, rcv := refCV(tc.iv)
			if math.IsInf(cv, 1) != tc.inf {
				t.Fatalf("cv %v, want inf %v", cv, tc.inf)
			}
			if (cv <= 0.2) != tc.regular {
				t.Errorf("cv %.3f (mean %.0f ms): regular %v, want %v", cv, mean, cv <= 0.2, tc.regular)
			}
			if !sameFloat(mean, rm) || !sameFloat(cv, rcv) {
				t.Errorf("mean %v cv %v; reference %v %v", mean, cv, rm, rcv)
			}
		})
	}
}

func sameFloat(a, b float64) bool {
	if math.IsInf(a, 1) || math.IsInf(b, 1) {
		return math.IsInf(a, 1) && math.IsInf(b, 1)
	}
	return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b))
}

// FuzzIntervalCV checks IntervalCV against the plain reference on any
// intervals: same mean and CV, never NaN or negative, input untouched.
func FuzzIntervalCV(f *testing.F) {
	f.Add([]byte{0xd0, 0x07, 0, 0, 0xb8, 0x0b, 0, 0, 0xd0, 0x07, 0, 0})
	f.Add([]byte{})
	f.Add(make([]byte, 4*40))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 4*64 {
			return
		}
		iv := make([]uint32, len(b)/4)
		for i := range iv {
			iv[i] = binary.LittleEndian.Uint32(b[4*i:])
		}
		in := append([]uint32(nil), iv...)
		mean, cv := IntervalCV(iv)
		if math.IsNaN(cv) || cv < 0 || math.IsNaN(mean) || mean < 0 {
			t.Fatalf("mean %v cv %v", mean, cv)
		}
		rm, rcv := refCV(iv)
		if !sameFloat(mean, rm) || !sameFloat(cv, rcv) {
			t.Fatalf("mean %v cv %v; reference %v %v", mean, cv, rm, rcv)
		}
		for i := range iv {
			if iv[i] != in[i] {
				t.Fatal("input changed")
			}
		}
	})
}

const sec = int64(time.Second)

// TestRegularityAdd drives one table through the cases a rule meets.
func TestRegularityAdd(t *testing.T) {
	for _, tc := range []struct {
		name  string
		times []int64 // event times, in order of arrival
		want  []int   // indexes of the events judged regular
		late  uint64
	}{
		{"a loop is regular from its 5th event", []int64{0, 2 * sec, 4 * sec, 6 * sec, 8 * sec, 10 * sec}, []int{4, 5}, 0},
		{"a burst at one instant is not", []int64{0, 0, 0, 0, 0, 0}, nil, 0},
		{"a late event is ignored", []int64{0, 2 * sec, 4 * sec, 3 * sec, 6 * sec, 8 * sec}, []int{5}, 1},
		{"a pause starts over", []int64{0, 2 * sec, 4 * sec, 6 * sec, 600 * sec, 602 * sec, 604 * sec, 606 * sec, 608 * sec}, []int{8}, 0},
		{"a person is not", []int64{0, 5 * sec, 7 * sec, 50 * sec, 52 * sec, 120 * sec}, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegularity(t, time.Minute, 5, 0.2, 0)
			var got []int
			for i, at := range tc.times {
				if r.Add(42, at, true) {
					got = append(got, i)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("regular at %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("regular at %v, want %v", got, tc.want)
				}
			}
			if r.Late() != tc.late {
				t.Errorf("late %d, want %d", r.Late(), tc.late)
			}
		})
	}
}

func TestRegularityPeek(t *testing.T) {
	r := newRegularity(t, time.Minute, 3, 0.1, 0)
	if _, ok := r.Peek(1, 0); ok {
		t.Fatal("an empty table knows a key")
	}
	for i := range 40 { // more than the ring holds
		r.Add(1, int64(i)*3*sec, false)
	}
	tm, ok := r.Peek(1, 117*sec)
	if !ok || tm.Events != RegularityIntervals+1 || tm.Mean != 3*time.Second || tm.CV != 0 {
		t.Fatalf("%+v %v", tm, ok)
	}
	if _, ok := r.Peek(1, 117*sec+int64(time.Minute)+1); ok {
		t.Fatal("a key idle past the gap is still known")
	}
}

func TestRegularityBounded(t *testing.T) {
	r := newRegularity(t, time.Minute, 5, 0.2, 4000) // 1000 keys
	heavy := uint64(7)
	for i := range 10 {
		r.Add(heavy, int64(i)*sec, false)
	}
	for k := range 100000 {
		r.Add(uint64(k+100), 10*sec, false)
	}
	if r.Len() > 1000 {
		t.Fatalf("len %d over the cap", r.Len())
	}
	if r.Evictions() == 0 {
		t.Fatal("no eviction")
	}
	if !r.Add(heavy, 10*sec, true) {
		t.Fatal("the heavy key was evicted by a flood of keys seen once")
	}
	if n := r.Sweep(int64(time.Hour)); n == 0 || r.Len() != 0 {
		t.Fatalf("sweep dropped %d, %d left", n, r.Len())
	}
}

func TestRegularityAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	r := newRegularity(t, time.Minute, 20, 0.2, 4*4096)
	i := uint64(0)
	op := func() {
		i++
		r.Add(i%3000, int64(i)*int64(time.Millisecond), i%2 == 0)
	}
	for range 20000 {
		op()
	}
	if n := testing.AllocsPerRun(10000, op); n != 0 {
		t.Errorf("Add: %v allocs per run, want 0", n)
	}
}

func TestRegularityConcurrent(t *testing.T) {
	r := newRegularity(t, time.Hour, 5, 0.2, 0)
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for v := range 1000 {
				r.Add(uint64(1+g), int64(v)*sec, v%10 == 0)
				r.Add(uint64(100+g*1000+v), 0, false)
			}
		}()
	}
	for range 4 {
		<-done
	}
	for g := range 4 {
		if tm, ok := r.Peek(uint64(1+g), 999*sec); !ok || tm.CV != 0 || tm.Events != RegularityIntervals+1 {
			t.Fatalf("key %d: %+v %v", 1+g, tm, ok)
		}
	}
}

func BenchmarkRegularityAdd(b *testing.B) {
	r := newRegularity(b, time.Minute, 20, 0.2, 0)
	b.ReportAllocs()
	i := int64(0)
	for b.Loop() {
		i++
		r.Add(uint64(i%1000), i*int64(time.Millisecond), false)
	}
}

func BenchmarkRegularityJudge(b *testing.B) {
	r := newRegularity(b, time.Minute, 20, 0.2, 0)
	b.ReportAllocs()
	i := int64(0)
	for b.Loop() {
		i++
		r.Add(uint64(i%1000), i*int64(time.Millisecond), true)
	}
}

// TestRegularityRates measures, with one-second timestamps, how often runs
// of 32 intervals come out regular at a CV of 0.18 (the built-in rule's):
// sleep loops almost always, people almost never. docs/rules.md quotes it.
func TestRegularityRates(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	rate := func(base, spread int) float64 {
		const trials = 4000
		under := 0
		for range trials {
			var iv [32]uint32
			at := rng.IntN(1000)
			prev := at / 1000 * 1000
			for i := range iv {
				at += base + rng.IntN(spread)
				cur := at / 1000 * 1000
				iv[i], prev = uint32(cur-prev), cur
			}
			if _, cv := IntervalCV(iv[:]); cv <= 0.18 {
				under++
			}
		}
		return float64(under) / trials
	}
	for _, tc := range []struct {
		name         string
		base, spread int // milliseconds: base + uniform [0, spread)
		min, max     float64
	}{
		{"sleep(2) + up to 1 s", 2000, 1000, 0.98, 1},
		{"sleep(2.3) + up to 1 s", 2300, 1000, 0.97, 1},
		{"sleep(2.5) + up to 1 s", 2500, 1000, 0.97, 1},
		{"sleep(7) + up to 300 ms", 7000, 300, 1, 1},
		{"sleep(30) + up to 1 s", 30000, 1000, 1, 1},
		{"gallery, 1 to 4 s a picture", 1000, 3000, 0, 0.01},
		{"people reading, 5 s to 95 s a page", 5000, 90000, 0, 0},
	} {
		r := rate(tc.base, tc.spread)
		t.Logf("%-36s regular in %.4f of runs", tc.name, r)
		if r < tc.min || r > tc.max {
			t.Errorf("%s: regular in %.4f of runs, want [%v, %v]", tc.name, r, tc.min, tc.max)
		}
	}
}

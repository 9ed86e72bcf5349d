package counting

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestSketchUnionIsOneTable: values spread over three tables (three nodes)
// and merged with Union give the sketch, and so the result, of one table
// that saw them all, in the exact range and in the registers' alike, in
// both windows.
func TestSketchUnionIsOneTable(t *testing.T) {
	const period = int64(time.Minute)
	base := int64(1_800_000_000) * int64(time.Second)
	base -= base % period
	for _, tc := range []struct {
		name       string
		prev, cur  int // distinct values in the previous and current window
		repeatEach int
	}{
		{"few", 0, 3, 1},
		{"four per node", 0, 12, 2},
		{"exact limit", 2, 32, 1},
		{"just dense", 5, 33, 1},
		{"dense both", 200, 500, 3},
		{"exact over dense", 40, 20, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.cur)))
			mk := func() *Distinct {
				d, err := NewDistinct(DistinctConfig{Period: time.Duration(period), Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
			one := mk()
			nodes := []*Distinct{mk(), mk(), mk()}
			var ins [2]Sketch // the same values through Insert, window by window
			add := func(n int, at int64) {
				for i := range n {
					v := rng.Uint64()
					s := &ins[(at-base)/period%2]
					if n, exact := s.Exact(); !s.Insert(v) && exact {
						t.Fatalf("Insert of a new value into %d exact ones changed nothing", n)
					}
					for r := range tc.repeatEach {
						one.Add(7, v, at)
						nodes[(i+r)%3].Add(7, v, at)
					}
				}
			}
			add(tc.prev, base+1)
			add(tc.cur, base+period+1)
			now := base + period + period/3
			var want [2]Sketch
			start, ok := one.Sketches(7, now, &want[0], &want[1])
			if !ok || start != base+period {
				t.Fatalf("Sketches: start %d ok %v, want %d true", start, ok, base+period)
			}
			var got [2]Sketch
			for _, d := range nodes {
				var s [2]Sketch
				if st, _ := d.Sketches(7, now, &s[0], &s[1]); st != start {
					t.Fatalf("node window %d, want %d", st, start)
				}
				got[0].Union(&s[0])
				got[1].Union(&s[1])
			}
			for w := range 2 {
				if got[w].Estimate() != want[w].Estimate() || !got[w].Covers(&want[w]) || !want[w].Covers(&got[w]) {
					t.Errorf("window %d: merged estimate %v, one table %v", w, got[w].Estimate(), want[w].Estimate())
				}
			}
			if ins[1] != want[0] || ins[0] != want[1] || ins[1].Insert(12345) && ins[1].Insert(12345) {
				t.Errorf("Insert: %v and %v, one table %v and %v (or a repeat changed it)", ins[1].Estimate(), ins[0].Estimate(), want[0].Estimate(), want[1].Estimate())
			}
			r := one.ResultOf(start, got[0].Estimate(), got[0].UnionEstimate(&got[1]), now)
			if ref := one.Peek(7, now); math.Abs(r.Count-ref.Count) > 1e-3 || r.Exceeded != ref.Exceeded || r.Reset != ref.Reset {
				t.Errorf("ResultOf %+v, one table's Peek %+v", r, ref)
			}
		})
	}
}

// TestSketchBinary: the binary form round-trips, and malformed input is an
// error naming what is wrong, never a panic.
func TestSketchBinary(t *testing.T) {
	d, _ := NewDistinct(DistinctConfig{Period: time.Minute, Limit: 1})
	for _, n := range []int{0, 1, 32, 33, 1000} {
		for v := range n {
			d.Add(uint64(n), uint64(v)*7919, 1)
		}
		var s, p, back Sketch
		d.Sketches(uint64(n), 1, &s, &p)
		b, err := s.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := back.UnmarshalBinary(b); err != nil || back != s {
			t.Errorf("%d values: round trip %v (err %v)", n, back.Estimate(), err)
		}
	}
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"unknown form", []byte("X"), "unknown form"},
		{"short registers", append([]byte("D"), make([]byte, 12)...), "bytes of registers"},
		{"rank too high", append([]byte("D"), append(make([]byte, 127), 200)...), "rank 200"},
		{"partial entry", []byte("S12345"), "bytes of values"},
		{"too many values", append([]byte("S"), make([]byte, 6*33)...), "bytes of values"},
		{"repeated value", []byte("S\x01\x00\x00\x00\x00\x01\x01\x00\x00\x00\x00\x01"), "repeated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Sketch
			err := s.UnmarshalBinary(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one with %q", err, tc.want)
			}
		})
	}
}

func FuzzSketchUnmarshal(f *testing.F) {
	f.Add([]byte("S"))
	f.Add(append([]byte("D"), make([]byte, 128)...))
	f.Add([]byte("S\x01\x00\x00\x00\x00\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1024 {
			return
		}
		var s Sketch
		if s.UnmarshalBinary(b) != nil {
			return
		}
		out, _ := s.AppendBinary(nil)
		var back Sketch
		if err := back.UnmarshalBinary(out); err != nil || back != s {
			t.Fatalf("round trip of %q: %v", b, err)
		}
		s.Union(&back)
		if s != back {
			t.Fatalf("a sketch's union with itself changed it")
		}
	})
}

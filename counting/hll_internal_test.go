package counting

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMaxRegisters: maxRegisters' eight bytes at a time give what a max
// per register gives, on register arrays from empty to saturated, ranks 0
// to maxRank.
func TestMaxRegisters(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 20000 {
		var a, b [DistinctRegisters]uint8
		fill := rng.IntN(DistinctRegisters + 1) // registers set
		for j := range fill {
			a[rng.IntN(DistinctRegisters)] = uint8(rng.IntN(maxRank + 1))
			if j%2 == 0 || i%3 == 0 {
				b[rng.IntN(DistinctRegisters)] = uint8(rng.IntN(maxRank + 1))
			}
		}
		if i%7 == 0 { // ranks as place gives them: mostly low
			for j := range a {
				_, a[j] = place(rng.Uint32())
				_, b[j] = place(rng.Uint32())
			}
			a[0], b[1] = maxRank, maxRank
		}
		u := a
		maxRegisters(&u, &b)
		for j := range u {
			if u[j] != max(a[j], b[j]) {
				t.Fatalf("case %d: register %d: max %d, want %d of %d and %d", i, j, u[j], max(a[j], b[j]), a[j], b[j])
			}
		}
	}
	if _, r := place(0); r != maxRank {
		t.Fatalf("rank of fingerprint 0 is %d, want maxRank %d", r, maxRank)
	}
}

// BenchmarkMaxRegisters compares, in one run, the union of two dense
// windows' registers (what Distinct.estimate makes when a register rises)
// eight at a time and one at a time.
func BenchmarkMaxRegisters(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	var cur, prev [DistinctRegisters]uint8
	for j := range cur {
		_, cur[j] = place(rng.Uint32())
		_, prev[j] = place(rng.Uint32())
	}
	var u [DistinctRegisters]uint8
	b.Run("words", func(b *testing.B) {
		for b.Loop() {
			u = prev
			maxRegisters(&u, &cur)
		}
	})
	b.Run("bytes", func(b *testing.B) {
		for b.Loop() {
			u = prev
			for i := range u {
				u[i] = max(u[i], cur[i])
			}
		}
	})
}

// hllEstimateChain is hllEstimate as one chain of float adds, register by
// register, as it was made before: what hllEstimate must give to the bit.
func hllEstimateChain(reg *[DistinctRegisters]uint8) float64 {
	const m = DistinctRegisters
	sum, zeros := 0.0, 0
	for _, r := range reg {
		sum += pow2neg[r]
		if r == 0 {
			zeros++
		}
	}
	if zeros == m {
		return 0
	}
	e := 0.7213 / (1 + 1.079/m) * m * m / sum
	if e <= 2.5*m && zeros > 0 {
		e = m * math.Log(float64(m)/float64(zeros))
	}
	return e
}

// TestHLLEstimateExact: the four sums of hllEstimate give, to the bit, the
// estimate of one chain of adds, from empty registers to full ones, ranks
// 0 to maxRank.
func TestHLLEstimateExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for i := range 50000 {
		var a [DistinctRegisters]uint8
		for range rng.IntN(3 * DistinctRegisters) {
			if i%2 == 0 {
				_, a[rng.IntN(DistinctRegisters)] = place(rng.Uint32())
			} else {
				a[rng.IntN(DistinctRegisters)] = uint8(rng.IntN(maxRank + 1))
			}
		}
		if got, want := hllEstimate(&a), hllEstimateChain(&a); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("case %d: %v, want %v (%v)", i, got, want, a)
		}
	}
}

// BenchmarkHLLEstimate: four sums against one chain, in one run.
func BenchmarkHLLEstimate(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	var reg [DistinctRegisters]uint8
	for j := range reg {
		_, reg[j] = place(rng.Uint32())
	}
	var sink float64
	b.Run("sums", func(b *testing.B) {
		for b.Loop() {
			sink += hllEstimate(&reg)
		}
	})
	b.Run("chain", func(b *testing.B) {
		for b.Loop() {
			sink += hllEstimateChain(&reg)
		}
	})
	_ = sink
}

package engine

import (
	"slices"
	"testing"
)

// TestMitigableNext: Next finds every set bit once, in order, across words,
// from any starting rule, with its group's key.
func TestMitigableNext(t *testing.T) {
	set := []int{0, 5, 63, 64, 100, 127, 128, 190}
	plan := make([]rulePlan, 192)
	for i := range plan {
		plan[i].group = int32(i % 3)
	}
	k := Mitigable{bits: make([]uint64, 3), keys: []uint64{10, 11, 12}, plan: plan}
	for _, r := range set {
		k.bits[r>>6] |= 1 << (r & 63)
	}
	for from := range 192 {
		var got []int
		for r, key, ok := k.Next(from); ok; r, key, ok = k.Next(r + 1) {
			if key != uint64(10+r%3) {
				t.Fatalf("rule %d: key %d, want %d", r, key, 10+r%3)
			}
			got = append(got, r)
		}
		var want []int
		for _, r := range set {
			if r >= from {
				want = append(want, r)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("from %d: %v, want %v", from, got, want)
		}
	}
	if _, _, ok := (&Mitigable{}).Next(0); ok {
		t.Fatal("an empty Mitigable has a rule")
	}
}

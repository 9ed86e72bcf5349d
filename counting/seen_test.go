package counting

import (
	"testing"
	"time"
)

func TestSeen(t *testing.T) {
	const s = int64(time.Second)
	seen, err := NewSeen(3, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	seen.Add(1, 0)
	seen.Add(2, 1*s)
	if !seen.Take(1, 2*s) {
		t.Error("1 not seen")
	}
	if seen.Take(1, 2*s) {
		t.Error("1 taken twice")
	}
	if seen.Take(9, 2*s) {
		t.Error("9 never added")
	}
	// Past the cap the oldest go first.
	seen.Add(3, 3*s)
	seen.Add(4, 4*s)
	seen.Add(5, 5*s)
	if seen.Take(2, 5*s) {
		t.Error("2 should have been forgotten for room")
	}
	if !seen.Take(3, 5*s) {
		t.Error("3 forgotten too early")
	}
	// Past the time to live.
	if seen.Take(4, 15*s) {
		t.Error("4 outlived its time to live")
	}
	seen.Add(6, 30*s) // forgets 5 on the way
	if n := seen.Len(); n != 1 {
		t.Errorf("Len = %d, want 1", n)
	}
	// A key added again is not forgotten by its first entry's expiry.
	seen.Add(6, 35*s)
	seen.Add(7, 41*s) // the entry of 6 at 30 s expires; the one at 35 s stays
	if !seen.Take(6, 41*s) {
		t.Error("6, added again, was forgotten with its first entry")
	}
	if _, err := NewSeen(0, time.Second); err == nil {
		t.Error("NewSeen(0) accepted")
	}
}

func BenchmarkSeen(b *testing.B) {
	seen, _ := NewSeen(1<<20, time.Minute)
	b.ReportAllocs()
	var i uint64
	for b.Loop() {
		i++
		seen.Add(i, int64(i)*1000)
		seen.Take(i, int64(i)*1000)
	}
}

package cputime_test

import (
	"testing"
	"time"

	"github.com/guardd/guardd/cputime"
)

// spin burns CPU on the calling goroutine until the process's CPU time has
// moved by at least d, or a wall-clock minute passes.
func spin(d time.Duration) time.Duration {
	start, wall := cputime.Process(), time.Now()
	x := uint64(1)
	for cputime.Since(start) < d && time.Since(wall) < time.Minute {
		for range 1 << 16 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink = x
	return cputime.Since(start)
}

var sink uint64

// TestProcessCountsWork: CPU time moves with work done, and not with a
// goroutine that only waits.
func TestProcessCountsWork(t *testing.T) {
	if got := spin(30 * time.Millisecond); got < 30*time.Millisecond {
		t.Fatalf("a busy loop moved the CPU time by %v in a minute, want at least 30ms", got)
	}
	start := cputime.Process()
	if start <= 0 {
		t.Fatalf("Process = %v after a busy loop, want > 0", start)
	}
	time.Sleep(200 * time.Millisecond) // the thing under test: a wait is not CPU time
	if d := cputime.Since(start); d > 100*time.Millisecond {
		t.Errorf("sleeping 200ms used %v of CPU time, want well under 100ms", d)
	}
}

// BenchmarkReport shows the metric as a benchmark reports it.
func BenchmarkReport(b *testing.B) {
	start := cputime.Process()
	x := uint64(1)
	for b.Loop() {
		x = x*6364136223846793005 + 1442695040888963407
	}
	sink = x
	cputime.Report(b, start, int64(b.N), "cpu-ns/op")
}

package cputime

import (
	"syscall"
	"testing"
	"time"
)

// Process returns the CPU time, user plus system, that the process has used
// so far on all its threads. Resolution is the kernel's accounting tick or
// better; it returns 0 if getrusage fails (it cannot for the calling
// process), so a benchmark reports a zero rather than stopping.
func Process() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Since returns the CPU time the process has used since start, a value
// Process returned.
func Since(start time.Duration) time.Duration {
	return Process() - start
}

// Report adds to b the CPU time used since start divided by n, in
// nanoseconds, under unit: "cpu-ns/op" with n = b.N, or "cpu-ns/line" with
// the lines read. Nothing is reported when n is not positive.
func Report(b *testing.B, start time.Duration, n int64, unit string) {
	if n > 0 {
		b.ReportMetric(float64(Since(start))/float64(n), unit)
	}
}

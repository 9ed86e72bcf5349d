package main

import (
	"bufio"
	"bytes"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// replayGCPercent is the GOGC of a replay. A replay is a batch job whose live
// heap is mostly counters that only grow, and whose lines allocate nothing:
// collecting when the heap reaches five times the live heap rather than twice
// spares most collections, and their write barriers, for some 15% more peak
// memory on the benchmark log (BENCHMARKS.md).
const replayGCPercent = 400

// tuneReplayGC sets the garbage collector for a replay, unless GOGC or
// GOMEMLIMIT says otherwise, and returns what puts it back (tests replay
// in-process). The heap is held under three quarters of the memory the
// machine or the cgroup has, so the larger GOGC never costs memory the
// default one would not have needed.
func tuneReplayGC() (restore func()) {
	gc, limit := -2, int64(-1)
	if os.Getenv("GOGC") == "" {
		gc = debug.SetGCPercent(replayGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		if m := memoryAvailable(); m > 0 {
			limit = debug.SetMemoryLimit(m / 4 * 3)
		}
	}
	return func() {
		if gc != -2 {
			debug.SetGCPercent(gc)
		}
		if limit >= 0 {
			debug.SetMemoryLimit(limit)
		}
	}
}

// memoryAvailable returns the smaller of the machine's memory and the
// cgroup's limit, in bytes, or 0 when neither can be read.
func memoryAvailable() int64 {
	var total int64
	if f, err := os.Open("/proc/meminfo"); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			if rest, ok := strings.CutPrefix(s.Text(), "MemTotal:"); ok {
				if kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64); err == nil {
					total = kb << 10
				}
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64); err == nil && n > 0 && (total == 0 || n < total) {
			total = n // "max" (no limit) does not parse
		}
	}
	return total
}

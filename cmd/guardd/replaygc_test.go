package main

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestTuneReplayGC: a replay collects at GOGC=400 under a memory limit, and
// puts back what it found; GOGC set in the environment wins.
func TestTuneReplayGC(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT is set: the replay leaves the collector alone")
	}
	before := debug.SetGCPercent(-1)
	debug.SetGCPercent(before)
	beforeLimit := debug.SetMemoryLimit(-1)
	restore := tuneReplayGC()
	got := debug.SetGCPercent(replayGCPercent)
	limit := debug.SetMemoryLimit(-1)
	restore()
	if got != replayGCPercent {
		t.Errorf("GOGC during a replay = %d, want %d", got, replayGCPercent)
	}
	if m := memoryAvailable(); m > 0 && limit != m/4*3 {
		t.Errorf("memory limit during a replay = %d, want 3/4 of %d", limit, m)
	}
	if after := debug.SetGCPercent(before); after != before {
		t.Errorf("GOGC after = %d, want %d back", after, before)
	}
	if after := debug.SetMemoryLimit(-1); after != beforeLimit {
		t.Errorf("memory limit after = %d, want %d back", after, beforeLimit)
	}
	t.Setenv("GOGC", "100")
	restore = tuneReplayGC()
	if got := debug.SetGCPercent(before); got != before {
		t.Errorf("with GOGC set, the replay changed it to %d", got)
	}
	restore()
}

package testwait_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/guardd/guardd/testwait"
)

// fakeTB records what Until does to a test instead of failing this one.
type fakeTB struct {
	helpers int
	failed  []string
}

func (f *fakeTB) Helper() { f.helpers++ }
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = append(f.failed, fmt.Sprintf(format, args...))
}

func TestUntil(t *testing.T) {
	for _, c := range []struct {
		name    string
		holdsAt int // the poll at which cond first holds; 0: never
		timeout time.Duration
		wantErr string
	}{
		{name: "at once", holdsAt: 1, timeout: time.Second},
		{name: "after some polls", holdsAt: 12, timeout: time.Minute},
		{name: "never", timeout: 3 * time.Second, wantErr: "timed out after 3s waiting for the answer to arrive"},
		{name: "zero timeout, holds", holdsAt: 1},
		{name: "zero timeout, never", wantErr: "timed out after 0s waiting for the answer to arrive"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// In a bubble: the polls sleep on the fake clock, so a timeout
			// of a minute costs nothing and the elapsed time is exact.
			synctest.Test(t, func(t *testing.T) {
				var tb fakeTB
				polls := 0
				start := time.Now()
				testwait.Until(&tb, c.timeout, "the answer to arrive", func() bool {
					polls++
					return c.holdsAt > 0 && polls >= c.holdsAt
				})
				took := time.Since(start)
				if tb.helpers == 0 {
					t.Error("Until did not call t.Helper: its failures would point at testwait")
				}
				if c.wantErr == "" {
					if len(tb.failed) != 0 {
						t.Fatalf("failed with %q, want success", tb.failed)
					}
					if polls != c.holdsAt {
						t.Errorf("polled %d times, want %d (it returns as soon as cond holds)", polls, c.holdsAt)
					}
					return
				}
				if len(tb.failed) != 1 || tb.failed[0] != c.wantErr {
					t.Fatalf("failures %q, want exactly [%q]", tb.failed, c.wantErr)
				}
				if took != c.timeout {
					t.Errorf("gave up after %v, want exactly the timeout %v", took, c.timeout)
				}
			})
		})
	}
}

// TestUntilBackoff: the pause between polls starts at First and doubles up
// to Most, so a slow condition costs a poll every Most at worst.
func TestUntilBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var at []time.Duration
		start := time.Now()
		testwait.Until(t, time.Minute, "ten polls", func() bool {
			at = append(at, time.Since(start))
			return len(at) == 10
		})
		want := []time.Duration{0}
		for pause := testwait.First; len(want) < 10; pause = min(2*pause, testwait.Most) {
			want = append(want, want[len(want)-1]+pause)
		}
		if fmt.Sprint(at) != fmt.Sprint(want) {
			t.Errorf("polled at %v, want %v", at, want)
		}
	})
}

// TestUntilRealClock: outside a bubble Until sees a change made by another
// goroutine, and gives up no sooner than its timeout with a message naming
// what it waited for.
func TestUntilRealClock(t *testing.T) {
	var flag atomic.Bool
	go func() {
		time.Sleep(20 * time.Millisecond) // the other side: something happens later
		flag.Store(true)
	}()
	testwait.Until(t, 10*time.Second, "the flag to be set", flag.Load)

	var tb fakeTB
	start := time.Now()
	testwait.Until(&tb, 50*time.Millisecond, "a flag never set", func() bool { return false })
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Errorf("gave up after %v, before the 50ms timeout", took)
	}
	if len(tb.failed) != 1 || !strings.Contains(tb.failed[0], "waiting for a flag never set") {
		t.Errorf("failures %q, want one naming what was awaited", tb.failed)
	}
}

func TestFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := 0
		if !testwait.For(time.Second, func() bool { n++; return n == 3 }) {
			t.Error("For = false for a condition that holds at the third poll")
		}
		start := time.Now()
		if testwait.For(2*time.Second, func() bool { return false }) {
			t.Error("For = true for a condition that never holds")
		}
		if took := time.Since(start); took != 2*time.Second {
			t.Errorf("For gave up after %v, want 2s", took)
		}
	})
}

// parkedHere blocks on ch: the function TestBlocked looks for.
//
//go:noinline
func parkedHere(ch chan struct{}) { <-ch }

// busyHere spins until stop is set: on a stack, never blocked.
//
//go:noinline
func busyHere(stop *atomic.Bool) {
	for !stop.Load() {
	}
}

func TestBlocked(t *testing.T) {
	const parked, busy = "testwait_test.parkedHere", "testwait_test.busyHere"
	if testwait.Blocked(parked) {
		t.Fatal("Blocked is true before any goroutine runs parkedHere")
	}
	ch := make(chan struct{})
	done := make(chan struct{})
	go func() { parkedHere(ch); close(done) }()
	testwait.Until(t, 10*time.Second, "parkedHere to block on its channel", func() bool { return testwait.Blocked(parked) })
	close(ch)
	<-done
	if testwait.Blocked(parked) {
		t.Error("Blocked is true after parkedHere returned")
	}

	var stop atomic.Bool
	go busyHere(&stop)
	defer stop.Store(true)
	for range 20 {
		if testwait.Blocked(busy) {
			t.Fatal("Blocked is true for a goroutine that only spins")
		}
	}
}

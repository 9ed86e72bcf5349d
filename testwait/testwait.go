package testwait

import (
	"bytes"
	"runtime"
	"time"
)

// TB is the part of testing.TB that Until uses: *testing.T, *testing.B,
// *testing.F and testing.TB all satisfy it.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// First and Most bound the pause between two polls: it starts at First and
// doubles up to Most, so a condition that holds soon is seen soon and a slow
// one is not polled in a busy loop.
const (
	First = time.Millisecond
	Most  = 20 * time.Millisecond
)

// Until returns as soon as cond holds. If cond still does not hold once
// timeout has passed (it is checked one last time at the deadline), Until
// fails t with "timed out after <timeout> waiting for <what>" and returns:
// what should read as the end of that sentence ("the tail to read line 3").
//
// cond runs on the caller's goroutine, and Until calls t.Fatalf: call it
// from the test's goroutine.
func Until(t TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !For(timeout, cond) {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// For polls cond as Until does and reports whether it held before timeout
// passed. It is for the caller that fails with its own message (the state
// it found, a log to show) or that goes on either way.
func For(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	pause := First
	for !cond() {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		time.Sleep(min(pause, left)) // polling a condition, with a deadline
		pause = min(2*pause, Most)
	}
	return true
}

// Blocked reports whether some goroutine with fn on its stack is blocked:
// waiting in a system call, on the network, a channel, a lock, a timer or a
// select, rather than running or ready to run. fn is a function as
// tracebacks print it, with enough of its package to be unique
// ("capture.(*LiveSource).ReadPacket"). It is the signal that a goroutine
// under test has reached the wait a test means to interrupt:
//
//	testwait.Until(t, 10*time.Second, "ReadPacket to wait", func() bool {
//		return testwait.Blocked("capture.(*LiveSource).ReadPacket")
//	})
//
// It reads every goroutine's stack (runtime.Stack, which stops the world):
// poll it in tests, not in a loop that measures time.
func Blocked(fn string) bool {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		// "goroutine 7 [chan receive, 2 minutes, locked to thread]:"
		header, stack, _ := bytes.Cut(g, []byte("\n"))
		if !bytes.Contains(stack, []byte(fn)) {
			continue
		}
		_, state, _ := bytes.Cut(header, []byte("["))
		state, _, _ = bytes.Cut(state, []byte("]"))
		state, _, _ = bytes.Cut(state, []byte(","))
		switch string(state) {
		case "running", "runnable", "preempted", "copystack", "idle", "dead":
		default: // "syscall", "IO wait", "chan receive", "select", "sleep" ...
			return true
		}
	}
	return false
}

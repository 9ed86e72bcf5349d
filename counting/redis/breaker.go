package redis

import (
	"sync"
	"sync/atomic"
	"time"
)

// BreakerState is the state of a circuit breaker.
type BreakerState uint8

// Breaker states: closed passes calls, open refuses them until its
// cool-down has passed, half-open lets one probe through.
const (
	BreakerClosed BreakerState = iota
	BreakerHalfOpen
	BreakerOpen
	numBreakerStates
)

var breakerNames = [numBreakerStates]string{"closed", "half_open", "open"}

// String returns the state's name, or "other"; safe as a metric label.
func (s BreakerState) String() string {
	if s < numBreakerStates {
		return breakerNames[s]
	}
	return "other"
}

// Breaker is a circuit breaker on one Redis endpoint (the server, the
// Sentinel master, or one Cluster master): Threshold
// consecutive failures open it; after Cooldown, one probe is let through
// (half-open); the probe's success closes it, its failure opens it again.
// Time is passed in. Safe for concurrent use.
type Breaker struct {
	threshold int
	cooldown  time.Duration

	mu       sync.Mutex
	cur      atomic.Uint32 // state, readable without mu (peek)
	state    BreakerState
	fails    int
	openedAt time.Time
	onChange func(BreakerState)
}

// NewBreaker returns a closed breaker. onChange, if not nil, is called
// with the new state on every transition, under the breaker's lock.
func NewBreaker(threshold int, cooldown time.Duration, onChange func(BreakerState)) *Breaker {
	if onChange == nil {
		onChange = func(BreakerState) {}
	}
	return &Breaker{threshold: max(threshold, 1), cooldown: cooldown, onChange: onChange}
}

// Allow reports whether a call may go to the endpoint at now, and whether
// it is the half-open probe.
func (b *Breaker) Allow(now time.Time) (ok, probe bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case BreakerClosed:
		return true, false
	case BreakerOpen:
		if now.Sub(b.openedAt) >= b.cooldown {
			b.setLocked(BreakerHalfOpen)
			return true, true
		}
	}
	return false, false
}

// Success records a call that succeeded.
func (b *Breaker) Success() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fails = 0
	if b.state != BreakerClosed {
		b.setLocked(BreakerClosed)
	}
}

// Failure records a call that failed or missed its deadline at now.
func (b *Breaker) Failure(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fails++
	if b.state == BreakerHalfOpen || (b.state == BreakerClosed && b.fails >= b.threshold) {
		b.openedAt = now
		b.setLocked(BreakerOpen)
	}
}

// State returns the current state.
func (b *Breaker) State() BreakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}

// peek returns the state without the lock: for onChange callbacks, which
// run under it.
func (b *Breaker) peek() BreakerState { return BreakerState(b.cur.Load()) }

func (b *Breaker) setLocked(s BreakerState) {
	b.state = s
	b.cur.Store(uint32(s))
	b.onChange(s)
}

package throttle

import (
	"sync"
	"sync/atomic"
	"time"
)

// inflight counts the requests in flight per (rule, key): taken when nginx
// asks and a concurrency rule admits the request, released when the
// request's access log line arrives (matched by $request_id) or, failing
// that, after a timeout. One per Limiter, so counts survive reloads.
type inflight struct {
	mu               sync.Mutex
	timeout          int64
	counts           map[slotKey]int32
	pending          map[uint64]*taken // request ID hash -> what it holds
	free             []*taken
	max              int // pending requests tracked at most
	timeouts, logged uint64
	held             atomic.Int64 // len(pending), read without the lock
}

type slotKey struct {
	rule string // rule name: counts survive a reload that keeps the rule
	key  uint64
}

const maxHeld = 4 // concurrency rules one request can hold

type taken struct {
	at    int64
	n     int
	slots [maxHeld]slotKey
}

func newInflight(timeout time.Duration, capacity int) *inflight {
	return &inflight{timeout: int64(timeout), counts: map[slotKey]int32{}, pending: map[uint64]*taken{}, max: capacity}
}

// acquire takes a slot of (rule, key) for request id at now if fewer than
// max are in flight, and reports whether it did and how many are then in
// flight.
func (f *inflight) acquire(id uint64, rule string, key uint64, max int32, now int64) (bool, int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sk := slotKey{rule, key}
	c := f.counts[sk]
	if c >= max {
		return false, c
	}
	t := f.pending[id]
	if t == nil {
		if len(f.pending) >= f.max {
			return true, c // tracking is full: admitted, not counted
		}
		if k := len(f.free); k > 0 {
			t, f.free = f.free[k-1], f.free[:k-1]
		} else {
			t = new(taken)
		}
		t.at, t.n = now, 0
		f.pending[id] = t
		f.held.Store(int64(len(f.pending)))
	}
	if t.n == maxHeld {
		return true, c // held enough already; admitted unlimited by this one
	}
	t.slots[t.n] = sk
	t.n++
	f.counts[sk] = c + 1
	return true, c + 1
}

// release gives back what request id holds; its log line has arrived.
func (f *inflight) release(id uint64, now int64) {
	if f.held.Load() == 0 {
		return // most log lines, when no concurrency rule holds anything
	}
	f.mu.Lock()
	if t := f.pending[id]; t != nil {
		f.releaseLocked(id, t)
		f.logged++
	}
	f.mu.Unlock()
}

func (f *inflight) releaseLocked(id uint64, t *taken) {
	for _, sk := range t.slots[:t.n] {
		if c := f.counts[sk] - 1; c > 0 {
			f.counts[sk] = c
		} else {
			delete(f.counts, sk)
		}
	}
	delete(f.pending, id)
	f.held.Store(int64(len(f.pending)))
	if len(f.free) < 1024 {
		f.free = append(f.free, t)
	}
}

// sweep releases the requests taken more than timeout before now: their
// log lines never came (no access_log, a lost line).
func (f *inflight) sweep(now int64) {
	f.mu.Lock()
	for id, t := range f.pending {
		if now-t.at > f.timeout {
			f.releaseLocked(id, t)
			f.timeouts++
		}
	}
	f.mu.Unlock()
}

type inflightStats struct {
	total            int
	timeouts, logged uint64
}

func (f *inflight) stats() inflightStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return inflightStats{len(f.pending), f.timeouts, f.logged}
}

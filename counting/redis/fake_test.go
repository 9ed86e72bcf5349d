package redis

import (
	"context"
	"errors"
	"sync"
	"time"
)

// fakeStore is an in-process Store for unit tests: the scripts' state
// machines (params.apply) over a map, with a settable clock and failure.
type fakeStore struct {
	mu    sync.Mutex
	now   int64 // µs
	state map[string]State
	est   map[string]estimate
	nodes map[string]int64
	fail  error
	calls int
}

func newFakeStore(now time.Time) *fakeStore {
	return &fakeStore{now: now.UnixMicro(), state: map[string]State{}, est: map[string]estimate{}, nodes: map[string]int64{}}
}

var errFake = errors.New("fake: connection refused")

func (s *fakeStore) Apply(_ context.Context, ops []Op, states []State, errs []error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.fail != nil {
		for i := range errs {
			errs[i] = s.fail
		}
		return s.fail
	}
	for i, o := range ops {
		p := params{alg: o.Alg, period: o.Period, limit: o.Limit, burst: o.Burst, interval: float64(o.Period) / o.Limit}
		st, e := p.step(s.state[o.Key], s.est[o.Key], call{delta: o.Delta, release: o.Release, relWin: o.RelWin, held: o.Held, want: o.Want, nodes: o.Nodes, flush: o.Flush}, s.now)
		s.state[o.Key], s.est[o.Key] = st, e
		states[i] = st
	}
	return nil
}

func (s *fakeStore) Heartbeat(_ context.Context, node string, ttl time.Duration) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return 0, s.fail
	}
	s.nodes[node] = s.now
	n := 0
	for _, at := range s.nodes {
		if s.now-at < ttl.Microseconds() {
			n++
		}
	}
	return n, nil
}

// setNow moves the store's clock, Redis TIME, to now.
func (s *fakeStore) setNow(now time.Time) {
	s.mu.Lock()
	s.now = now.UnixMicro()
	s.mu.Unlock()
}

func (s *fakeStore) setFail(err error) {
	s.mu.Lock()
	s.fail = err
	s.mu.Unlock()
}

package throttle

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// ShedConfig configures load shedding, Stripe's fleet-usage and
// worker-utilisation shedders for one edge: requests fall into traffic
// classes, and while the upstream is overloaded the least important
// classes are refused with 503 and Retry-After, lowest first. No Classes:
// no shedding.
type ShedConfig struct {
	// Classes, most important first. A request belongs to the first class
	// one of whose rules' count expression holds for it; a request in no
	// class belongs to the class without rules (the default class), or
	// the last class when every class has rules. The first class is never
	// shed.
	Classes []ShedClass
	// The capacity signals, measured every Interval from the access log
	// (Limiter.Observe) and the requests in flight. A signal at 0 is not
	// used; at least one must be set.
	//
	// Latency: the mean request time of the interval's log lines above
	// which the upstream is overloaded.
	Latency time.Duration
	// ErrorRate: the share of 5xx answers in the interval's log lines, in
	// (0, 1].
	ErrorRate float64
	// InFlight: requests asked about and not yet logged (those with an
	// X-Request-ID).
	InFlight int
	// Interval between evaluations; 0 means 1s.
	Interval time.Duration
	// Hold: a level is kept at least this long before it steps down, and a
	// shed request is told to come back after it (Retry-After); 0 means 10s.
	Hold time.Duration
	// Recover: a level steps down only when every signal is below
	// Recover times its threshold (hysteresis); 0 means 0.8.
	Recover float64
	// Adaptive makes the in-flight threshold a limit learned by AIMD, as
	// Netflix's concurrency-limits does: it starts at InFlight, grows by one
	// each interval the upstream is fast (latency under Recover times
	// Latency, errors under ErrorRate) while the requests in flight use at
	// least half of it, and shrinks by a tenth each interval it is slow, in
	// [1, 10 x InFlight]. It needs InFlight and Latency.
	Adaptive bool
}

// ShedClass is one traffic class: the requests that the count expression of
// one of Rules holds for.
type ShedClass struct {
	Name  string
	Rules []string
}

// Validate checks c as New does.
func (c ShedConfig) Validate() error {
	_, err := c.withDefaults()
	return err
}

func (c *ShedConfig) withDefaults() (ShedConfig, error) {
	s := *c
	if len(s.Classes) == 0 {
		return s, nil
	}
	if len(s.Classes) < 2 {
		return s, errors.New("throttle: shedding: want at least two classes (the first is never shed)")
	}
	if s.Latency < 0 || s.ErrorRate < 0 || s.ErrorRate > 1 || s.InFlight < 0 || s.Interval < 0 || s.Hold < 0 || s.Recover < 0 || s.Recover >= 1 {
		return s, errors.New("throttle: shedding: latency, in_flight, interval and hold must be >= 0, error_rate in [0, 1], recover in [0, 1)")
	}
	if s.Adaptive && (s.InFlight == 0 || s.Latency == 0) {
		return s, errors.New("throttle: shedding: adaptive needs in_flight (the starting limit) and latency (the target)")
	}
	if s.Latency == 0 && s.ErrorRate == 0 && s.InFlight == 0 {
		return s, errors.New("throttle: shedding: no capacity signal; set latency, error_rate or in_flight")
	}
	seen := map[string]bool{}
	for _, c := range s.Classes {
		if c.Name == "" || seen[c.Name] {
			return s, fmt.Errorf("throttle: shedding: class name %q empty or repeated", c.Name)
		}
		seen[c.Name] = true
	}
	if s.Interval == 0 {
		s.Interval = time.Second
	}
	if s.Hold == 0 {
		s.Hold = 10 * time.Second
	}
	if s.Recover == 0 {
		s.Recover = 0.8
	}
	return s, nil
}

// shedder holds the shedding level: 0 sheds nothing, L sheds the last L
// classes. Decide reads it without a lock.
type shedder struct {
	cfg   ShedConfig
	level atomic.Int32

	// This interval's log lines, their request times in microseconds and
	// their 5xx: updated by every line, on the pipeline's workers.
	n, sumUS, errs atomic.Int64

	mu      sync.Mutex
	changed int64 // when level last changed
	last    signals
	limit   atomic.Int64 // the in-flight threshold; adaptive with Adaptive
}

type signals struct {
	latency   float64 // mean seconds, NaN without lines
	errorRate float64
	inFlight  int
}

func (s *shedder) observe(status int, requestTime float64) {
	s.n.Add(1)
	if requestTime > 0 && requestTime < 1e6 {
		s.sumUS.Add(int64(requestTime * 1e6))
	}
	if status >= 500 && status <= 599 {
		s.errs.Add(1)
	}
}

// step closes the interval at now and moves the level: up one class when a
// signal is over its threshold, down one when every signal is below
// Recover times its threshold and the level has been held for Hold.
func (s *shedder) step(now int64, inFlight int) (level int, sig signals, moved bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sig = signals{latency: math.NaN(), inFlight: inFlight}
	n, sum, errs := s.n.Swap(0), s.sumUS.Swap(0), s.errs.Swap(0)
	if n > 0 {
		sig.latency = float64(sum) / 1e6 / float64(n)
		sig.errorRate = float64(errs) / float64(n)
	}
	s.last = sig
	c := &s.cfg
	over, calm := false, true
	check := func(v, limit float64) {
		if limit <= 0 || math.IsNaN(v) {
			return
		}
		if v > limit {
			over = true
		}
		if v >= c.Recover*limit {
			calm = false
		}
	}
	check(sig.latency, c.Latency.Seconds())
	check(sig.errorRate, c.ErrorRate)
	limit := s.limit.Load()
	if limit == 0 {
		limit = int64(c.InFlight)
	}
	if c.Adaptive {
		limit = s.adapt(limit, sig)
		s.limit.Store(limit)
	}
	check(float64(sig.inFlight), float64(limit))
	level = int(s.level.Load())
	switch {
	case over && level < len(c.Classes)-1:
		level++
	case calm && level > 0 && now-s.changed >= int64(c.Hold):
		level--
	default:
		return level, sig, false
	}
	s.level.Store(int32(level))
	s.changed = now
	return level, sig, true
}

// adapt is one AIMD step of the in-flight limit.
func (s *shedder) adapt(limit int64, sig signals) int64 {
	c := &s.cfg
	if math.IsNaN(sig.latency) {
		return limit // no answers this interval: nothing learned
	}
	slow := sig.latency > c.Latency.Seconds() || (c.ErrorRate > 0 && sig.errorRate > c.ErrorRate)
	fast := sig.latency < c.Recover*c.Latency.Seconds() && (c.ErrorRate == 0 || sig.errorRate < c.Recover*c.ErrorRate)
	switch {
	case slow:
		limit = max(1, limit*9/10)
	case fast && int64(sig.inFlight)*2 >= limit:
		limit = min(10*int64(c.InFlight), limit+1)
	}
	return limit
}

// shed reports whether a request of class index c is shed now.
func (s *shedder) shed(c int) bool {
	l := int(s.level.Load())
	return l > 0 && c >= len(s.cfg.Classes)-l
}

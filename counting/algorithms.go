package counting

import (
	"math"
	"time"
)

// This file holds the per-algorithm arithmetic on one slot. Every function
// here runs with the slot's shard locked.

// windowStart returns the start of the aligned window holding now.
func (t *Table) windowStart(now int64) int64 {
	r := now % t.period
	if r < 0 {
		r += t.period
	}
	return now - r
}

// expired says a key has been idle for more than two periods at now; its
// state then reads the same as a new key's.
func (t *Table) expired(s *shard, sl *slot, now int64) bool {
	switch t.alg {
	case SlidingWindow, FixedWindow:
		// The last event was before the end of the window starting at sl.t.
		return now-sl.t >= 3*t.period
	case SlidingLog:
		at, _ := s.Ext.log.entries(sl)
		return len(at) == 0 || now-at[len(at)-1] > 2*t.period
	case TokenBucket: // last refill; a burst above Requests takes longer to refill
		return now-sl.t > max(2*t.period, int64(math.Ceil(t.burst/t.rate)))
	default: // GCRA: theoretical arrival time
		return now-sl.t > 2*t.period
	}
}

// initLocked gives a newly stored key the state of an unused one at now.
func (t *Table) initLocked(s *shard, sl *slot, now int64) {
	switch t.alg {
	case SlidingWindow, FixedWindow:
		sl.t, sl.a, sl.b = t.windowStart(now), 0, 0
	case TokenBucket:
		sl.t, sl.a, sl.b = now, t.burst, 0
	case GCRA:
		sl.t, sl.a, sl.b = now, 0, 0
	case SlidingLog:
		sl.t, sl.a, sl.b = s.Ext.log.alloc(), 0, 0
	}
}

// resetLocked releases what a key holds outside its slot.
func (t *Table) resetLocked(s *shard, sl *slot) {
	if t.alg == SlidingLog {
		s.Ext.log.release(sl.t)
	}
	sl.t, sl.a, sl.b = 0, 0, 0
}

func (t *Table) addLocked(s *shard, sl *slot, n float64, now int64) Result {
	switch t.alg {
	case FixedWindow:
		return t.fixedAdd(s, sl, n, now)
	case SlidingLog:
		return t.logAdd(s, sl, n, now)
	case TokenBucket:
		return t.bucketAdd(sl, n, now)
	case GCRA:
		return t.gcraAdd(sl, n, now)
	default:
		return t.slidingAdd(s, sl, n, now)
	}
}

func (t *Table) peekLocked(s *shard, sl *slot, now int64) Result {
	switch t.alg {
	case FixedWindow:
		v, at := t.fixedView(sl, now)
		return t.fixedResult(&v, at, 1)
	case SlidingLog:
		at, w, ref := t.logView(s, sl, now)
		return t.logResult(at, w, ref, 1)
	case TokenBucket:
		v, at := t.bucketView(sl, now)
		r := t.bucketResult(&v, at)
		if v.a < 1 {
			r.Exceeded = true
			r.RetryAfter = t.bucketRetry(&v, 1)
		}
		return r
	case GCRA:
		tat := max(sl.t, now)
		r := t.gcraResult(tat, now)
		if r.Exceeded = now < tat+int64(math.Round(t.interval))-t.tol; r.Exceeded {
			r.RetryAfter = t.gcraRetry(tat, now, 1)
		}
		return r
	default:
		v, at := t.slidingView(sl, now)
		return t.slidingResult(&v, at, 1)
	}
}

// usageLocked is the key's current usage, by which a full shard picks the
// key to evict.
func (t *Table) usageLocked(s *shard, sl *slot, now int64) float64 {
	switch t.alg {
	case FixedWindow:
		v, _ := t.fixedView(sl, now)
		return v.a
	case SlidingLog:
		_, w, _ := t.logView(s, sl, now)
		sum := 0.0
		for _, x := range w {
			sum += float64(x)
		}
		return sum
	case TokenBucket:
		v, _ := t.bucketView(sl, now)
		return t.burst - v.a
	case GCRA:
		return max(0, float64(sl.t-now)) / t.interval
	default:
		v, at := t.slidingView(sl, now)
		return v.b*float64(t.period-(at-v.t))/float64(t.period) + v.a
	}
}

// dur converts a nanosecond span to a Duration, never negative.
func dur(ns int64) time.Duration { return time.Duration(max(ns, 0)) }

// retryAfter rounds a wait in nanoseconds up to a Duration of at least a
// nanosecond: a caller told "exceeded" is never told to retry now.
func retryAfter(ns float64) time.Duration {
	d := math.Ceil(ns)
	if !(d >= 1) { // also catches NaN
		return 1
	}
	if d > float64(math.MaxInt64) {
		return math.MaxInt64
	}
	return time.Duration(d)
}

// Sliding window counter.
//
// Events of the previous window (a late event) are added to the previous
// count and the key is judged as at the start of the current window; older
// events are ignored and counted by Late.

func (t *Table) slidingAdd(s *shard, sl *slot, n float64, now int64) Result {
	// No division on the common path: the slot holds its window's start.
	switch e := now - sl.t; {
	case e >= 0 && e < t.period:
		sl.a += n
	case e >= t.period && e < 2*t.period:
		sl.b, sl.a, sl.t = sl.a, n, sl.t+t.period
	case e >= 2*t.period:
		sl.b, sl.a, sl.t = 0, n, t.windowStart(now)
	case e >= -t.period:
		sl.b += n
		now = sl.t
	default:
		s.Ext.late++
		now = sl.t
	}
	return t.slidingResult(sl, now, n)
}

// slidingView returns the slot as it would be after advancing to now, and
// the time to judge it at (now, or the start of the key's window when now is
// earlier).
func (t *Table) slidingView(sl *slot, now int64) (slot, int64) {
	v := *sl
	switch e := now - v.t; {
	case e < 0:
		now = v.t
	case e < t.period:
	case e < 2*t.period:
		v.b, v.a, v.t = v.a, 0, v.t+t.period
	default:
		v.b, v.a, v.t = 0, 0, t.windowStart(now)
	}
	return v, now
}

func (t *Table) slidingResult(sl *slot, now int64, m float64) Result {
	ws := sl.t
	est := sl.b*float64(t.period-(now-ws))*t.perNS + sl.a
	r := Result{Count: est, Remaining: max(0, t.requests-est)}
	if sl.a > 0 {
		r.Reset = dur(ws + 2*t.period - now)
	} else if sl.b > 0 {
		r.Reset = dur(ws + t.period - now)
	}
	if est <= t.requests {
		return r
	}
	r.Exceeded = true
	r.RetryAfter = t.slidingRetry(sl, now, m)
	return r
}

// slidingRetry is when est(τ) + m <= Requests, with no event meanwhile. In
// the current window est falls as the previous one slides out; in the
// next, as the current one does.
func (t *Table) slidingRetry(sl *slot, now int64, m float64) time.Duration {
	p := float64(t.period)
	ws := sl.t
	target := t.requests - m
	var at float64 // from the start of the current window
	switch {
	case target < 0:
		at = 2 * p
	case target >= sl.a && sl.b > 0:
		at = p - (target-sl.a)*p/sl.b
	case sl.a > 0:
		at = 2*p - target*p/sl.a
	default:
		at = p
	}
	return retryAfter(at - float64(now-ws))
}

// Fixed window.
//
// An event older than the key's current window is ignored and counted by
// Late; the key is judged as at the start of its window.

func (t *Table) fixedAdd(s *shard, sl *slot, n float64, now int64) Result {
	switch e := now - sl.t; {
	case e >= 0 && e < t.period:
		sl.a += n
	case e >= t.period:
		sl.a, sl.t = n, t.windowStart(now)
	default:
		s.Ext.late++
		now = sl.t
	}
	return t.fixedResult(sl, now, n)
}

func (t *Table) fixedView(sl *slot, now int64) (slot, int64) {
	v := *sl
	switch e := now - v.t; {
	case e < 0:
		now = v.t
	case e >= t.period:
		v.a, v.t = 0, t.windowStart(now)
	}
	return v, now
}

func (t *Table) fixedResult(sl *slot, now int64, _ float64) Result {
	end := sl.t + t.period
	r := Result{Count: sl.a, Remaining: max(0, t.requests-sl.a)}
	if sl.a > 0 {
		r.Reset = dur(end - now)
	}
	if sl.a > t.requests {
		r.Exceeded = true
		r.RetryAfter = retryAfter(float64(end - now))
	}
	return r
}

// Token bucket.
//
// An event earlier than the last refill is judged at the last refill: the
// bucket never gives tokens back.

func (t *Table) bucketView(sl *slot, now int64) (slot, int64) {
	v := *sl
	if now > v.t {
		v.a = min(t.burst, v.a+float64(now-v.t)*t.rate)
		v.t = now
	}
	return v, v.t
}

func (t *Table) bucketAdd(sl *slot, n float64, now int64) Result {
	v, now := t.bucketView(sl, now)
	*sl = v
	conform := n <= sl.a
	if conform {
		sl.a -= n
	}
	r := t.bucketResult(sl, now)
	if !conform {
		r.Exceeded = true
		r.RetryAfter = t.bucketRetry(sl, n)
	}
	return r
}

func (t *Table) bucketResult(sl *slot, now int64) Result {
	_ = now
	return Result{
		Count:     t.burst - sl.a,
		Remaining: sl.a,
		Reset:     time.Duration(math.Ceil((t.burst - sl.a) / t.rate)),
	}
}

func (t *Table) bucketRetry(sl *slot, n float64) time.Duration {
	need := min(n, t.burst) - sl.a // above capacity: until full
	return retryAfter(need / t.rate)
}

// GCRA.
//
// The theoretical arrival time (TAT) only moves forward; a late event is
// judged at its own time against it, which can only make it stricter.

func (t *Table) gcraAdd(sl *slot, n float64, now int64) Result {
	tat := max(sl.t, now)
	conform := false
	if n <= t.burst {
		next := tat + int64(math.Round(n*t.interval))
		if now >= next-t.tol {
			conform = true
			sl.t, tat = next, next
		}
	}
	r := t.gcraResult(tat, now)
	if !conform {
		r.Exceeded = true
		r.RetryAfter = t.gcraRetry(tat, now, n)
	}
	return r
}

func (t *Table) gcraResult(tat, now int64) Result {
	used := float64(tat-now) / t.interval
	return Result{Count: used, Remaining: max(0, t.burst-used), Reset: dur(tat - now)}
}

func (t *Table) gcraRetry(tat, now int64, n float64) time.Duration {
	if n > t.burst {
		return retryAfter(float64(tat - now)) // never conforms; until reset
	}
	return retryAfter(float64(tat-now) + math.Round(n*t.interval) - float64(t.tol))
}

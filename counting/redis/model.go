package redis

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/guardd/guardd/counting"
)

// State is one key's fleet-wide state as Redis holds it, in Redis's clock
// (unix microseconds, from TIME inside the script). What the fields hold
// depends on the algorithm:
//
//	sliding_window  Win, Cur (its count), Prev (the previous window's count)
//	fixed_window    Win, Cur
//	sliding_log     Usage (sum over the period), At (oldest entry)
//	token_bucket    Cur (tokens, negative when in debt), At (last refill)
//	gcra            At (theoretical arrival time)
//
// Reset is stored with the key (Redis time when usage is back to zero), so
// every node reports the same reset and Retry-After for the same state.
type State struct {
	Now   int64 // Redis TIME when the script ran
	Win   int64
	Cur   float64
	Prev  float64
	At    int64
	Usage float64
	Reset int64
	// Grant is the lease granted by the call that returned this state.
	Grant float64
}

// Rule is what the fleet tier needs to know about one rule's limit.
type Rule struct {
	// Name names the rule in Redis keys ("guardd:{<name>:<key>}") and logs.
	Name  string
	Limit counting.Limit
	// Burst is the capacity of token_bucket and gcra; 0 means
	// Limit.Burst, or else Limit.Requests. Ignored by the window algorithms.
	Burst float64
	// OnError is what the rule's requests get while Redis is unreachable
	// or slower than its deadline.
	OnError OnError
	// Detection makes the counter a detector's (the rule engine's): every
	// event is counted, no lease is asked for, and Exceeded says the
	// fleet-wide count as last read back plus this node's unsent events is
	// over the limit. A log line cannot be refused, so there is nothing to
	// reserve; a node may see another's events up to a flush interval late.
	Detection bool
}

// OnError is a rule's behaviour while the fleet store is unavailable:
// counting's closed set, parsed once when the rule loads.
type OnError = counting.StoreErrorPolicy

// The three failure modes (DESIGN.md, on_store_error). The zero value is
// Local.
const (
	// Local judges a request against this node's own counts with its share
	// of the budget (the limit divided by the live nodes last seen).
	Local = counting.StoreErrorLocal
	// Open allows the request.
	Open = counting.StoreErrorOpen
	// Closed refuses it.
	Closed = counting.StoreErrorClosed
)

// decision is how Counter.Add made a decision: the label of
// guardd_counting_redis_decisions_total.
type decision uint8

// How decisions are made, a closed set.
const (
	// byFleet: two-tier, on this node's lease or its fleet view.
	byFleet decision = iota
	// byLeaseWait: refused while this node waits for a grant, its lease
	// and cold allowance spent.
	byLeaseWait
	// byOpen, byClosed, byLocal: the key's endpoint is unavailable
	// and the rule's OnError decided.
	byOpen
	byClosed
	byLocal
	numDecisions
)

var decisionNames = [numDecisions]string{byFleet: "fleet", byLeaseWait: "lease_wait", byOpen: "open", byClosed: "closed", byLocal: "local"}

// String returns the metric label, or "other".
func (m decision) String() string {
	if m < numDecisions {
		return decisionNames[m]
	}
	return "other"
}

// ParseOnError parses on_store_error; "" means Local.
func ParseOnError(s string) (OnError, error) { return counting.ParseStoreErrorPolicy(s) }

// params is a rule's limit in Redis's unit, microseconds.
type params struct {
	alg      counting.Algorithm
	period   int64   // µs
	limit    float64 // requests per period
	burst    float64 // token_bucket and gcra capacity
	interval float64 // µs per request (gcra), period/limit
}

// checkName refuses a rule name that cannot name Redis keys: every key of
// a rule's key is hash-tagged "guardd:{<name>:<key>}…" so that one script's
// keys share a Redis Cluster slot, and a brace in the name would move or
// end the tag (a name "}x" would leave the windows' keys of one script on
// different slots, which Cluster refuses).
func checkName(name string) error {
	if name == "" {
		return fmt.Errorf("counting/redis: rule without a name")
	}
	if strings.ContainsAny(name, "{}") {
		return fmt.Errorf("counting/redis: rule %q: a fleet-wide rule's name must not contain '{' or '}' (its Redis keys are hash-tagged {<rule>:<key>})", name)
	}
	return nil
}

func newParams(r Rule) (params, error) {
	l := r.Limit
	if l.Algorithm.String() == "other" {
		return params{}, fmt.Errorf("counting/redis: rule %q: unknown algorithm %d", r.Name, l.Algorithm)
	}
	if l.Period < time.Millisecond || l.Period > counting.MaxPeriod {
		return params{}, fmt.Errorf("counting/redis: rule %q: period %v: must be >= 1ms and <= %v", r.Name, l.Period, counting.MaxPeriod)
	}
	if !(l.Requests > 0) || math.IsInf(l.Requests, 0) {
		return params{}, fmt.Errorf("counting/redis: rule %q: requests %v: must be a positive finite number", r.Name, l.Requests)
	}
	if r.Burst < 0 || math.IsInf(r.Burst, 0) || math.IsNaN(r.Burst) {
		return params{}, fmt.Errorf("counting/redis: rule %q: burst %v: must be >= 0", r.Name, r.Burst)
	}
	if !r.OnError.Valid() {
		return params{}, fmt.Errorf("counting/redis: rule %q: unknown on_store_error %d", r.Name, r.OnError)
	}
	if err := checkName(r.Name); err != nil {
		return params{}, err
	}
	p := params{alg: l.Algorithm, period: l.Period.Microseconds(), limit: l.Requests, burst: r.Burst}
	if p.burst == 0 {
		p.burst = l.Burst
	}
	if p.burst == 0 {
		p.burst = l.Requests
	}
	p.interval = float64(p.period) / p.limit
	return p, nil
}

// call is one node's report for one key, as the scripts take it (see
// scripts.go).
type call struct {
	delta, release float64
	relWin         int64
	held           float64
	want           float64
	nodes          int
	flush          int64 // µs; 0: no pacing
}

// estimate is what a key's script keeps to pace grants (scripts.go, the
// fields "ef" and "en"): since when the key has taken events, and how
// many (deltas and grants, less hand-backs). The sliding log keeps none.
type estimate struct {
	since int64
	n     float64
}

// pace caps grant g out of headroom h at what a node asking for want per
// two flush intervals would spend before the key's budget runs out at the
// fleet's pace (e's events since e.since), as the scripts do; e0 is the
// estimate before the call (a key that has taken nothing yet is granted
// no more than the node asks for).
func pace(g, h float64, e0, e estimate, a call, now int64) float64 {
	if a.nodes <= 1 || a.flush <= 0 || g <= 1 {
		return g
	}
	if e0.n <= 0 {
		return min(g, max(1, math.Floor(a.want+grainEps)))
	}
	c := math.Floor(a.want/(2*float64(a.flush))*h*float64(now-e.since)/e.n + grainEps)
	return max(1, min(g, c))
}

// share is the lease a node may be granted out of headroom h, in whole
// events (see scripts.go; grainEps absorbs float error in h).
func share(h, capacity, held, want float64, nodes int) float64 {
	h = math.Floor(h + grainEps)
	if h <= 0 {
		return 0
	}
	g := max(1, math.Floor((h+held)/float64(max(nodes, 1))-held+grainEps))
	if h < capacity/2 {
		g = min(g, max(1, math.Floor(want+grainEps)))
	}
	return min(g, h)
}

// grainEps: a headroom within grainEps below a whole number of events is
// that number (float error in sums of whole events).
const grainEps = 1e-9

// step applies one call at Redis time now, exactly as the algorithm's Lua
// script does, and returns the new state with Grant set. The fake store
// and the tests use it; TestScriptsMatchModel checks the scripts against
// it. The sliding log keeps its entries outside State: here it is only a
// sum that does not age. e is the key's pace estimate (the zero value for
// a new key), returned updated.
func (p params) step(s State, e estimate, a call, now int64) (State, estimate) {
	s = p.advance(s, now)
	s.Grant = 0
	if e.since == 0 {
		e.since = now
	}
	e0 := e
	e.n += a.delta
	switch p.alg {
	case counting.SlidingWindow:
		s.Cur += a.delta
		if a.release > 0 {
			switch a.relWin {
			case s.Win:
				s.Cur = max(0, s.Cur-a.release)
				e.n = max(0, e.n-a.release)
			case s.Win - 1:
				s.Prev = max(0, s.Prev-a.release)
				e.n = max(0, e.n-a.release)
			}
		}
	case counting.FixedWindow:
		s.Cur += a.delta
		if a.release > 0 && a.relWin == s.Win {
			s.Cur = max(0, s.Cur-a.release)
			e.n = max(0, e.n-a.release)
		}
	case counting.SlidingLog:
		s.Usage += a.delta
		if a.release > 0 && a.relWin > now-p.period {
			s.Usage -= a.release
		}
	case counting.TokenBucket:
		s.Cur = min(p.burst, s.Cur-a.delta+a.release)
		e.n = max(0, e.n-a.release)
	case counting.GCRA:
		s.At = max(now, max(s.At, now)+int64(math.Floor((a.delta-a.release)*p.interval+0.5)))
		e.n = max(0, e.n-a.release)
	}
	if a.want > 0 {
		h := p.capacity() - p.usage(s, now)
		s.Grant = share(h, p.capacity(), a.held, a.want, a.nodes)
		if p.alg != counting.SlidingLog {
			s.Grant = pace(s.Grant, h, e0, e, a, now)
		}
		e.n += s.Grant
		switch p.alg {
		case counting.SlidingWindow, counting.FixedWindow:
			s.Cur += s.Grant
		case counting.SlidingLog:
			s.Usage += s.Grant
		case counting.TokenBucket:
			s.Cur -= s.Grant
		case counting.GCRA:
			s.At += int64(math.Floor(s.Grant*p.interval + 0.5))
		}
	}
	if p.alg == counting.SlidingLog && s.Usage > 0 {
		s.Reset = now + p.period
	}
	s.Reset = p.reset(s, now)
	s.Now = now
	return s, e
}

// released is s, advanced to now, with a hand-back of rel granted in
// window relWin (sliding_log: at time relWin) applied as the script will
// apply it: a node's view does not count against it the unused lease it is
// about to hand back (after a window rolls, the previous window's count
// holds the whole lease the node was granted in it).
func (p params) released(s State, rel float64, relWin, now int64) State {
	switch p.alg {
	case counting.SlidingWindow:
		switch relWin {
		case s.Win:
			s.Cur = max(0, s.Cur-rel)
		case s.Win - 1:
			s.Prev = max(0, s.Prev-rel)
		}
	case counting.FixedWindow:
		if relWin == s.Win {
			s.Cur = max(0, s.Cur-rel)
		}
	case counting.SlidingLog:
		if relWin > now-p.period {
			s.Usage = max(0, s.Usage-rel)
		}
	case counting.TokenBucket:
		s.Cur = min(p.burst, s.Cur+rel)
	case counting.GCRA:
		s.At = max(now, s.At-int64(math.Floor(rel*p.interval+0.5)))
	}
	return s
}

// capacity is what usage is judged against: the limit, or the burst of the
// shapers.
func (p params) capacity() float64 {
	if p.alg == counting.TokenBucket || p.alg == counting.GCRA {
		return p.burst
	}
	return p.limit
}

// advance moves s to Redis time now with no event: windows roll, buckets
// refill. Time never moves a state back (a failover to a host whose clock is
// behind keeps the newer window).
func (p params) advance(s State, now int64) State {
	switch p.alg {
	case counting.SlidingWindow:
		w := now / p.period
		switch {
		case w == s.Win+1:
			s.Prev, s.Cur, s.Win = s.Cur, 0, w
		case w > s.Win+1:
			s.Prev, s.Cur, s.Win = 0, 0, w
		}
	case counting.FixedWindow:
		if w := now / p.period; w > s.Win {
			s.Cur, s.Win = 0, w
		}
	case counting.SlidingLog:
		if now >= s.Reset {
			s.Usage, s.At = 0, 0
		}
	case counting.TokenBucket:
		if s.At == 0 {
			s.Cur, s.At = p.burst, now
		} else if now > s.At {
			s.Cur = min(p.burst, s.Cur+float64(now-s.At)*p.limit/float64(p.period))
			s.At = now
		}
	}
	return s
}

// usage is the algorithm's count at Redis time now of an advanced state.
func (p params) usage(s State, now int64) float64 {
	switch p.alg {
	case counting.SlidingWindow:
		e := min(max(now-s.Win*p.period, 0), p.period)
		return s.Prev*float64(p.period-e)/float64(p.period) + s.Cur
	case counting.FixedWindow:
		return s.Cur
	case counting.SlidingLog:
		return s.Usage
	case counting.TokenBucket:
		return p.burst - s.Cur
	case counting.GCRA:
		return max(0, float64(s.At-now)/p.interval)
	}
	return 0
}

// reset is the Redis time at which an advanced state's usage is zero.
func (p params) reset(s State, now int64) int64 {
	switch p.alg {
	case counting.SlidingWindow:
		switch {
		case s.Cur > 0:
			return (s.Win + 2) * p.period
		case s.Prev > 0:
			return (s.Win + 1) * p.period
		}
		return now
	case counting.FixedWindow:
		if s.Cur > 0 {
			return (s.Win + 1) * p.period
		}
		return now
	case counting.SlidingLog:
		return max(s.Reset, now)
	case counting.TokenBucket:
		if s.Cur >= p.burst {
			return now
		}
		return now + int64(math.Ceil((p.burst-s.Cur)*float64(p.period)/p.limit))
	case counting.GCRA:
		return max(s.At, now)
	}
	return now
}

// judge answers for an event of size n at Redis time now, given the
// remote state advanced to now and extra, this node's counts not yet
// reflected in it. consume reports whether the event is to be added to the
// node's pending delta (the window algorithms count every event, the
// shapers only conforming ones, as counting.Table does).
func (p params) judge(s State, now int64, extra, n float64) (r counting.Result, consume bool) {
	used := p.usage(s, now) + extra
	us := func(d float64) time.Duration { return time.Duration(math.Ceil(max(d, 0))) * time.Microsecond }
	switch p.alg {
	case counting.TokenBucket, counting.GCRA:
		capacity := p.burst
		consume = used+n <= capacity
		if consume {
			used += n
		}
		r.Count = used
		r.Remaining = max(0, capacity-used)
		rate := p.limit / float64(p.period) // per µs
		r.Reset = us(used / rate)
		if !consume {
			r.Exceeded = true
			r.RetryAfter = us((used + min(n, capacity) - capacity) / rate)
		}
		return r, consume
	}
	used += n
	r.Count = used
	r.Remaining = max(0, p.limit-used)
	r.Reset = us(float64(p.reset(s, now) - now))
	if extra+n > 0 && r.Reset == 0 {
		switch p.alg {
		case counting.SlidingWindow:
			r.Reset = us(float64((s.Win+2)*p.period - now))
		case counting.FixedWindow:
			r.Reset = us(float64((s.Win+1)*p.period - now))
		case counting.SlidingLog:
			r.Reset = us(float64(p.period))
		}
	}
	if used <= p.limit {
		return r, true
	}
	r.Exceeded = true
	per := float64(p.period)
	since := float64(now - s.Win*p.period)
	switch p.alg {
	case counting.SlidingWindow:
		// As counting's sliding window: when would prev*(P-e)/P + cur + n
		// fall to the limit, with no event meanwhile?
		cur := s.Cur + extra
		target := p.limit - n
		var at float64
		switch {
		case target < 0:
			at = 2 * per
		case target >= cur && s.Prev > 0:
			at = per - (target-cur)*per/s.Prev
		case cur > 0:
			at = 2*per - target*per/cur
		default:
			at = per
		}
		r.RetryAfter = us(at - since)
	case counting.FixedWindow:
		r.RetryAfter = us(per - since)
	case counting.SlidingLog:
		r.RetryAfter = r.Reset
	}
	return r, true
}

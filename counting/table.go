package counting

import (
	"math"
	"time"
)

// Table is a set of rate counters keyed on pre-hashed uint64 keys, all under
// one Limit. It is safe for concurrent use: keys are spread over the shards
// of a Sharded table, each under its own mutex.
type Table struct {
	alg      Algorithm
	period   int64   // nanoseconds
	requests float64 // limit per period
	burst    float64 // TokenBucket: capacity; GCRA: burst in events
	tol      int64   // GCRA: burst tolerance in nanoseconds, burst*interval
	rate     float64 // TokenBucket: tokens per nanosecond
	perNS    float64 // 1/period
	interval float64 // GCRA: emission interval in nanoseconds
	logCap   int     // SlidingLog: entries per key

	keys Sharded[slot, struct{}, tableShard]
}

// slot is one key's state, held beside the key (32 bytes in all). Its
// fields are read per algorithm:
//
//	SlidingWindow  t: start of current window  a: current count  b: previous count
//	FixedWindow    t: start of current window  a: current count
//	TokenBucket    t: time of last refill        a: tokens
//	GCRA           t: theoretical arrival time
//	SlidingLog     t: block in the shard's log   b: entries in the block
type slot struct {
	t    int64
	a, b float64
}

type shard = Shard[slot, struct{}, tableShard]

// tableShard is what a Table's shard holds beside its keys.
type tableShard struct {
	late uint64
	log  eventLog
}

// NewTable validates cfg and returns an empty table. It starts nothing; memory
// grows with the keys actually seen, up to MaxKeys.
func NewTable(cfg Config) (*Table, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	nshards, perShard := shardLayout(cfg.MaxKeys, 1, cfg.Shards)
	l := cfg.Limit
	t := &Table{
		alg:      l.Algorithm,
		period:   int64(l.Period),
		requests: l.Requests,
		rate:     l.Requests / float64(l.Period),
		perNS:    1 / float64(l.Period),
		interval: float64(l.Period) / l.Requests,
		burst:    l.Capacity(),
	}
	// A shard at its cap is two-thirds full, which keeps the probe runs of
	// a flood (a miss, an eviction, an insert per event) short.
	t.keys.Init(nshards, perShard)
	t.tol = int64(math.Round(t.burst * t.interval))
	if t.burst == t.requests {
		t.tol = t.period // exact, whatever the rounding of interval
	}
	if t.alg == SlidingLog {
		t.logCap = int(math.Ceil(l.Requests)) + 1
	}
	for i := range t.keys.shards {
		t.keys.shards[i].Ext.log.k = t.logCap
	}
	return t, nil
}

// Limit returns the limit the table was built with.
func (t *Table) Limit() Limit {
	l := Limit{Algorithm: t.alg, Period: time.Duration(t.period), Requests: t.requests}
	if t.burst != t.requests {
		l.Burst = t.burst
	}
	return l
}

// Add records an event of size n for key at event time now (unix
// nanoseconds) and returns the key's state after it. A negative, NaN or
// infinite n counts as 0; an Add of 0 is a Peek. It allocates nothing
// once the key's shard has grown to hold it.
func (t *Table) Add(key uint64, n float64, now int64) Result {
	return t.update(key, n, now, false)
}

// Admit is Add for an enforcement point that counts only what it lets
// through: the event is recorded only when it fits under the limit
// (usage, this event included, at most Requests). Otherwise nothing
// changes, Exceeded is set, and RetryAfter is when an event of the same
// size would fit, if none came meanwhile. For TokenBucket and GCRA, which
// only ever consume on a conforming event, it is Add.
func (t *Table) Admit(key uint64, n float64, now int64) Result {
	return t.update(key, n, now, true)
}

func (t *Table) update(key uint64, n float64, now int64, admit bool) Result {
	if !(n > 0) || math.IsInf(n, 1) {
		return t.Peek(key, now)
	}
	s, key, hash := t.keys.Place(key)
	s.Lock()
	i, found := s.Claim(key, hash)
	if i < 0 {
		i = s.Make(key, func() int { return t.victimLocked(s, now) })
	}
	if found && t.expired(s, s.Val(i), now) {
		t.resetLocked(s, s.Val(i))
		t.initLocked(s, s.Val(i), now)
	} else if !found {
		t.initLocked(s, s.Val(i), now)
	}
	var r Result
	if admit {
		r = t.admitLocked(s, s.Val(i), n, now)
	} else {
		r = t.addLocked(s, s.Val(i), n, now)
	}
	s.Unlock()
	return r
}

// Peek returns the state of key at now without recording anything. An
// unknown or expired key reads as unused. For the window algorithms,
// Exceeded says Count > Requests; for TokenBucket and GCRA it says an event
// of size 1 would not conform now. RetryAfter is then for an event of size 1.
func (t *Table) Peek(key uint64, now int64) Result {
	s, key, _ := t.keys.Place(key)
	s.Lock()
	var r Result
	if i := s.Lookup(key); i < 0 || t.expired(s, s.Val(i), now) {
		r = t.unused()
	} else {
		r = t.peekLocked(s, s.Val(i), now)
	}
	s.Unlock()
	return r
}

func (t *Table) unused() Result {
	if t.alg == TokenBucket || t.alg == GCRA {
		return Result{Remaining: t.burst}
	}
	return Result{Remaining: t.requests}
}

// Forget drops key's count, as if it had never been seen; it reports whether
// the key was held. An operator who deletes a rule's mitigation uses it so
// that the rule trips again only when the client goes over the limit anew.
func (t *Table) Forget(key uint64) bool {
	s, key, _ := t.keys.Place(key)
	s.Lock()
	defer s.Unlock()
	i := s.Lookup(key)
	if i >= 0 {
		s.Delete(t.releaseLocked(s, i))
	}
	return i >= 0
}

// releaseLocked releases what the key in slot i holds outside it, before
// the slot is deleted, and returns i.
func (t *Table) releaseLocked(s *shard, i int) int {
	t.resetLocked(s, s.Val(i))
	return i
}

// victimLocked picks the key a full shard evicts, and releases it: among
// the sampled keys an expired one if any, else the one with the least
// current usage (sampled LFU). Heavy keys therefore survive a flood of new
// keys, each of which arrives with a usage of one event.
func (t *Table) victimLocked(s *shard, now int64) int {
	var v leastUsed
	for i, sl := range s.Sample() {
		v.offer(i, t.expired(s, sl, now), t.usageLocked(s, sl, now))
	}
	return t.releaseLocked(s, v.at)
}

// Sweep drops the keys idle for more than two periods at now and returns how
// many it dropped. Keys are also dropped lazily when touched or sampled for
// eviction, so Sweep only returns memory sooner.
func (t *Table) Sweep(now int64) int {
	return t.keys.Sweep(func(s *shard, i int) bool {
		return t.expired(s, s.Val(i), now) && t.releaseLocked(s, i) >= 0
	})
}

// Len returns the number of keys tracked.
func (t *Table) Len() int { return t.keys.Len() }

// Evictions returns how many keys were dropped to keep the table under
// MaxKeys (expiry is not counted).
func (t *Table) Evictions() uint64 { return t.keys.Evictions() }

// Late returns how many events were ignored because they were older than
// the algorithm can place (see doc.go).
func (t *Table) Late() uint64 { return t.keys.Sum(func(s *shard) uint64 { return s.Ext.late }) }

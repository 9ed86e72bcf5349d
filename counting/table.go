package counting

import (
	"math"
	"math/bits"
	"sync"
	"time"
)

// Table is a set of rate counters keyed on pre-hashed uint64 keys, all under
// one Limit. It is safe for concurrent use: keys are spread over shards, each
// an open-addressing hash table (linear probing, backward-shift deletion)
// under its own mutex.
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

	shardShift uint // 64 - log2(len(shards))
	shardCap   int  // keys per shard
	maxSlots   int  // slots per shard at shardCap
	shards     []shard
}

// slot is one key's state. Its fields are read per algorithm:
//
//	SlidingWindow  t: start of current window  a: current count  b: previous count
//	FixedWindow    t: start of current window  a: current count
//	TokenBucket    t: time of last refill        a: tokens
//	GCRA           t: theoretical arrival time
//	SlidingLog     t: block in the shard's log   b: entries in the block
type slot struct {
	key  uint64 // 0 = empty; a key of 0 is stored as zeroKey
	t    int64
	a, b float64
}

// zeroKey stands for the key 0, which marks an empty slot. Keys 0 and
// zeroKey therefore share a counter; for hashed keys that is a 2^-63 chance.
const zeroKey = 0x9e3779b97f4a7c15

const (
	minSlots   = 8
	sampleSize = 8 // slots compared when a full shard evicts
)

type shard struct {
	mu        sync.Mutex
	slots     []slot
	n         int
	rng       uint64
	evictions uint64
	late      uint64
	log       eventLog
	_         [64]byte // keep neighbouring shards' locks off one cache line
}

// NewTable validates cfg and returns an empty table. It starts nothing; memory
// grows with the keys actually seen, up to MaxKeys.
func NewTable(cfg Config) (*Table, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	maxKeys := cfg.MaxKeys
	if maxKeys == 0 {
		maxKeys = DefaultMaxKeys
	}
	nshards := cfg.Shards
	if nshards == 0 {
		nshards = DefaultShards
		for nshards > 1 && maxKeys/nshards < 64 {
			nshards /= 2
		}
	}
	nshards = 1 << bits.Len(uint(nshards-1)) // round up to a power of two
	for nshards > maxKeys {                  // rounding up may pass the cap
		nshards /= 2
	}
	l := cfg.Limit
	t := &Table{
		alg:        l.Algorithm,
		period:     int64(l.Period),
		requests:   l.Requests,
		rate:       l.Requests / float64(l.Period),
		perNS:      1 / float64(l.Period),
		interval:   float64(l.Period) / l.Requests,
		burst:      l.Capacity(),
		shardShift: uint(64 - bits.TrailingZeros(uint(nshards))),
		shardCap:   maxKeys / nshards,
		shards:     make([]shard, nshards),
	}
	if nshards == 1 {
		t.shardShift = 64 // x >> 64 is 0 in Go
	}
	// A shard grows while under 80% load; at its cap it is two-thirds full,
	// which keeps the probe runs of a flood (a miss, an eviction, an insert
	// per event) short. It always has an empty slot.
	t.maxSlots = t.shardCap*3/2 + 1
	t.tol = int64(math.Round(t.burst * t.interval))
	if t.burst == t.requests {
		t.tol = t.period // exact, whatever the rounding of interval
	}
	if t.alg == SlidingLog {
		t.logCap = int(math.Ceil(l.Requests)) + 1
	}
	for i := range t.shards {
		t.shards[i].rng = uint64(i)*zeroKey + 1
		t.shards[i].log.k = t.logCap
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

// mix spreads the bits of a key: callers may pass keys that are not hashes.
func mix(key uint64) uint64 {
	key ^= key >> 33
	key *= 0xff51afd7ed558ccd
	key ^= key >> 33
	return key
}

func (t *Table) shardFor(key uint64) *shard {
	return &t.shards[mix(key)>>t.shardShift]
}

// home is the first slot probed for key in a shard of n slots.
func (t *Table) home(key uint64, n int) int {
	hi, _ := bits.Mul64(mix(key)<<(64-t.shardShift), uint64(n))
	return int(hi)
}

// findLocked returns the slot holding key, or the empty slot where it would
// go.
func (t *Table) findLocked(s *shard, key uint64) (int, bool) {
	n := len(s.slots)
	i := t.home(key, n)
	for {
		k := s.slots[i].key
		if k == key {
			return i, true
		}
		if k == 0 {
			return i, false
		}
		if i++; i == n {
			i = 0
		}
	}
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
	if key == 0 {
		key = zeroKey
	}
	s := t.shardFor(key)
	s.mu.Lock()
	if s.slots == nil {
		s.slots = make([]slot, min(minSlots, t.maxSlots))
	}
	i, found := t.findLocked(s, key)
	if found && t.expired(s, &s.slots[i], now) {
		t.resetLocked(s, &s.slots[i])
		t.initLocked(s, &s.slots[i], now)
	} else if !found {
		if s.n >= t.shardCap {
			t.evictLocked(s, now)
			i, _ = t.findLocked(s, key)
		} else if (s.n+1)*5 > len(s.slots)*4 && len(s.slots) < t.maxSlots {
			t.growLocked(s)
			i, _ = t.findLocked(s, key)
		}
		s.slots[i].key = key
		s.n++
		t.initLocked(s, &s.slots[i], now)
	}
	var r Result
	if admit {
		r = t.admitLocked(s, &s.slots[i], n, now)
	} else {
		r = t.addLocked(s, &s.slots[i], n, now)
	}
	s.mu.Unlock()
	return r
}

// Peek returns the state of key at now without recording anything. An
// unknown or expired key reads as unused. For the window algorithms,
// Exceeded says Count > Requests; for TokenBucket and GCRA it says an event
// of size 1 would not conform now. RetryAfter is then for an event of size 1.
func (t *Table) Peek(key uint64, now int64) Result {
	if key == 0 {
		key = zeroKey
	}
	s := t.shardFor(key)
	s.mu.Lock()
	var r Result
	if s.slots == nil {
		r = t.unused()
	} else if i, found := t.findLocked(s, key); !found || t.expired(s, &s.slots[i], now) {
		r = t.unused()
	} else {
		r = t.peekLocked(s, &s.slots[i], now)
	}
	s.mu.Unlock()
	return r
}

func (t *Table) unused() Result {
	if t.alg == TokenBucket || t.alg == GCRA {
		return Result{Remaining: t.burst}
	}
	return Result{Remaining: t.requests}
}

// growLocked moves a shard to a table 1.5 times larger (at most maxSlots).
func (t *Table) growLocked(s *shard) {
	n := min(max(len(s.slots)*3/2, minSlots), t.maxSlots)
	old := s.slots
	s.slots = make([]slot, n)
	for _, sl := range old {
		if sl.key == 0 {
			continue
		}
		i := t.home(sl.key, n)
		for s.slots[i].key != 0 {
			if i++; i == n {
				i = 0
			}
		}
		s.slots[i] = sl
	}
}

// Forget drops key's count, as if it had never been seen; it reports whether
// the key was held. An operator who deletes a rule's mitigation uses it so
// that the rule trips again only when the client goes over the limit anew.
func (t *Table) Forget(key uint64) bool {
	if key == 0 {
		key = zeroKey
	}
	s := t.shardFor(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.slots == nil {
		return false
	}
	i, found := t.findLocked(s, key)
	if found {
		t.deleteLocked(s, i)
	}
	return found
}

// deleteLocked empties slot i, shifting back the entries of its probe run.
func (t *Table) deleteLocked(s *shard, i int) {
	t.resetLocked(s, &s.slots[i])
	n := len(s.slots)
	j := i
	for {
		if j++; j == n {
			j = 0
		}
		k := s.slots[j].key
		if k == 0 {
			break
		}
		if !homeIn(t.home(k, n), i, j) {
			s.slots[i] = s.slots[j]
			i = j
		}
	}
	s.slots[i] = slot{}
	s.n--
}

// evictLocked removes one key from a full shard: among up to sampleSize
// occupied slots from a random position, an expired one if any, else the one
// with the least current usage (sampled LFU). Heavy keys therefore survive
// a flood of new keys, each of which arrives with a usage of one event.
func (t *Table) evictLocked(s *shard, now int64) {
	n := len(s.slots)
	i := sampleStart(&s.rng, n)
	victim, least := -1, math.Inf(1)
	for seen, scanned := 0, 0; seen < sampleSize && scanned < n; scanned++ {
		sl := &s.slots[i]
		if sl.key != 0 {
			seen++
			if t.expired(s, sl, now) {
				victim = i
				break
			}
			// The first sample is taken whatever its usage, so a shard
			// of infinite or NaN counts (absurd event sizes) still evicts.
			if u := t.usageLocked(s, sl, now); victim < 0 || u < least {
				victim, least = i, u
			}
		}
		if i++; i == n {
			i = 0
		}
	}
	if victim >= 0 {
		t.deleteLocked(s, victim)
		s.evictions++
	}
}

// Sweep drops the keys idle for more than two periods at now and returns how
// many it dropped. Keys are also dropped lazily when touched or sampled for
// eviction, so Sweep only returns memory sooner.
func (t *Table) Sweep(now int64) int {
	dropped := 0
	for si := range t.shards {
		s := &t.shards[si]
		s.mu.Lock()
		for i := 0; i < len(s.slots); {
			if sl := &s.slots[i]; sl.key != 0 && t.expired(s, sl, now) {
				t.deleteLocked(s, i)
				dropped++
				continue // an entry may have shifted into i
			}
			i++
		}
		s.mu.Unlock()
	}
	return dropped
}

// Len returns the number of keys tracked.
func (t *Table) Len() int {
	return int(t.sum(func(s *shard) uint64 { return uint64(s.n) }))
}

// Evictions returns how many keys were dropped to keep the table under
// MaxKeys (expiry is not counted).
func (t *Table) Evictions() uint64 {
	return t.sum(func(s *shard) uint64 { return s.evictions })
}

// Late returns how many events were ignored because they were older than
// the algorithm can place (see doc.go).
func (t *Table) Late() uint64 {
	return t.sum(func(s *shard) uint64 { return s.late })
}

// sum adds f over the shards, each read under its lock.
func (t *Table) sum(f func(*shard) uint64) uint64 {
	var n uint64
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		n += f(s)
		s.mu.Unlock()
	}
	return n
}

// homeIn reports whether home h lies cyclically in (i, j]: in backward-shift
// deletion, the entry at j then stays where it is rather than filling the
// hole at i. Table and Distinct share it.
func homeIn(h, i, j int) bool {
	if i <= j {
		return i < h && h <= j
	}
	return i < h || h <= j
}

// sampleStart advances a shard's xorshift state and maps it to a slot index
// in [0, n): where an eviction's sample begins.
func sampleStart(rng *uint64, n int) int {
	*rng ^= *rng << 13
	*rng ^= *rng >> 7
	*rng ^= *rng << 17
	hi, _ := bits.Mul64(*rng, uint64(n))
	return int(hi)
}

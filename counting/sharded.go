package counting

import (
	"iter"
	"math/bits"
	"sync"
)

// Sharded is the hash table under Table, Distinct, Regularity and
// counting/redis's Counter: pre-hashed uint64 keys spread over shards, each
// an open-addressing table (linear probing, backward-shift deletion) under
// its own lock, grown by half while under 80% load up to its cap of keys,
// at which it is two-thirds full. It holds per key a V in the array that
// probing reads, beside the key (keep it small, or struct{}), and a W in a
// second array at the same index, read only once the key is found (use
// struct{}, which costs nothing, when a V holds everything); E is each
// shard's own state (a log, a free list). What a key's state means, when
// it expires and which key a full shard evicts are the caller's: the table
// probes, inserts, grows, deletes, samples and walks.
//
// The key 0 marks an empty slot: Place returns the key to store in its
// place, ZeroKey. A slot moves when its shard grows or a key before it is
// deleted, so nothing may keep a slot's index or pointer beyond the
// shard's lock.
//
// Its methods are written so that a counter update costs what it did when
// each table had its own copy: they call no method of V, W or E (generic
// code would call those through a dictionary); Place, Lock and Claim
// inline, leaving one call, the probe, which calls nothing in turn; the key
// is mixed once, by Place, whose hash Claim passes to the probe (Lookup and
// Make, off a counter update's path, mix it again); Make,
// the slow path (allocate, grow, evict), takes the caller's choice of
// victim as a function called only at the cap; and the iterators All and
// Sample inline into the loops that range over them.
type Sharded[V, W, E any] struct {
	shards []Shard[V, W, E]
	shift  uint // 64 - log2(len(shards)); 64 for one shard
}

// Shard is one shard of a Sharded table. Its methods but Lock and Unlock
// must be called with the shard locked.
type Shard[V, W, E any] struct {
	mu        sync.Mutex // first, as a lookup reads it with e, side and used
	e         []entry[V]
	side      []W
	used      uint   // top bits of a mixed key that picked the shard
	n         int    // keys held
	cap       int    // keys at most
	maxSlots  int    // slots at cap keys
	rng       uint64 // xorshift state: where an eviction's sample begins
	evictions uint64

	// Ext is the caller's own state of the shard, guarded by its lock.
	Ext E
	// The line of the next shard's lock holds no field of this one: mu is
	// 8 bytes, 8-aligned, so at most 56 bytes before it share its line.
	// Not 64, which made Table's shard 256 bytes: a power-of-two stride
	// puts the 64 shards' locks in a quarter of L1's sets, and a counter
	// update missed on its lock 2.7 times as often (cachegrind).
	// TestShardStride keeps every shard off such a stride.
	_ [56]byte
}

// entry is one slot. The key comes after V so that an entry of a V of
// struct{} is the key alone (a zero-size last field would be padded).
type entry[V any] struct {
	val V
	key uint64 // 0: empty
}

// ZeroKey is the key a Sharded table stores for the key 0, which marks an
// empty slot. Keys 0 and ZeroKey therefore share a counter; for hashed keys
// that is a 2^-63 chance.
const ZeroKey = 0x9e3779b97f4a7c15

const (
	minSlots   = 8
	sampleSize = 8 // slots compared when a full shard evicts
)

// Init makes t n shards (a power of two) of up to perShard keys each
// (at least 1), all empty: a shard allocates its slots when its first key
// arrives.
func (t *Sharded[V, W, E]) Init(n, perShard int) {
	t.shards = make([]Shard[V, W, E], n)
	t.shift = uint(64 - bits.TrailingZeros(uint(n)))
	perShard = max(perShard, 1)
	for i := range t.shards {
		s := &t.shards[i]
		s.cap = perShard
		s.maxSlots = perShard*3/2 + 1
		s.used = 64 - t.shift
		s.rng = uint64(i)*ZeroKey + 1
	}
}

// shardLayout divides a table of maxKeys keys (0: DefaultMaxKeys), of
// which a key of this table takes share, over shards (0: DefaultShards,
// fewer for a small table): it returns the number of shards, a power of
// two, and the keys each may hold, for Sharded.Init.
func shardLayout(maxKeys, share, shards int) (n, perShard int) {
	if maxKeys == 0 {
		maxKeys = DefaultMaxKeys
	}
	maxKeys = max(maxKeys/share, 1)
	n = shards
	if n == 0 {
		n = DefaultShards
		for n > 1 && maxKeys/n < 64 {
			n /= 2
		}
	}
	n = 1 << bits.Len(uint(n-1))
	for n > maxKeys {
		n /= 2
	}
	return n, maxKeys / n
}

// mix spreads the bits of a key: callers may pass keys that are not hashes.
func mix(key uint64) uint64 {
	key ^= key >> 33
	key *= 0xff51afd7ed558ccd
	key ^= key >> 33
	return key
}

// For returns the shard of a stored key (see Place).
func (t *Sharded[V, W, E]) For(key uint64) *Shard[V, W, E] {
	return &t.shards[mix(key)>>t.shift] // x >> 64 is 0 in Go
}

// Place returns key's shard, to be locked, the key as stored there (the
// key 0, which marks an empty slot, is stored as ZeroKey) and its hash, to
// pass to Claim: the bits of the key's mix that did not pick the shard,
// which pick its first slot, so that Claim does not mix the key again.
// (It leaves the locking to the caller so that both inline.)
func (t *Sharded[V, W, E]) Place(key uint64) (s *Shard[V, W, E], stored, hash uint64) {
	if key == 0 {
		key = ZeroKey
	}
	m := mix(key)
	// x >> 64 is 0 in Go; 64 - shift (a shard's used) is at most 16.
	return &t.shards[m>>t.shift], key, m << ((64 - t.shift) & 63)
}

// Shards returns the shards, for a pass over every key.
func (t *Sharded[V, W, E]) Shards() []Shard[V, W, E] { return t.shards }

// Len returns the number of keys held.
func (t *Sharded[V, W, E]) Len() int {
	return int(t.Sum(func(s *Shard[V, W, E]) uint64 { return uint64(s.n) }))
}

// Evictions returns how many keys were evicted to keep the shards under
// their cap (Make).
func (t *Sharded[V, W, E]) Evictions() uint64 {
	return t.Sum(func(s *Shard[V, W, E]) uint64 { return s.evictions })
}

// Sum adds f over the shards, each read under its lock.
func (t *Sharded[V, W, E]) Sum(f func(*Shard[V, W, E]) uint64) uint64 {
	var n uint64
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		n += f(s)
		s.mu.Unlock()
	}
	return n
}

// Sweep deletes, shard by shard under its lock, each key for which drop
// (called with the shard locked) returns true, and returns how many it
// deleted. drop releases what the key holds outside its slots.
func (t *Sharded[V, W, E]) Sweep(drop func(s *Shard[V, W, E], i int) bool) int {
	dropped := 0
	for si := range t.shards {
		s := &t.shards[si]
		s.mu.Lock()
		for i := range s.All() {
			if drop(s, i) {
				s.Delete(i)
				dropped++
			}
		}
		s.mu.Unlock()
	}
	return dropped
}

// Lock locks the shard.
func (s *Shard[V, W, E]) Lock() { s.mu.Lock() }

// Unlock unlocks the shard.
func (s *Shard[V, W, E]) Unlock() { s.mu.Unlock() }

// Len returns the number of keys the shard holds.
func (s *Shard[V, W, E]) Len() int { return s.n }

// Key returns the key in slot i (0: none).
func (s *Shard[V, W, E]) Key(i int) uint64 { return s.e[i].key }

// Val returns the V of slot i.
func (s *Shard[V, W, E]) Val(i int) *V { return &s.e[i].val }

// Side returns the W of slot i.
func (s *Shard[V, W, E]) Side(i int) *W { return &s.side[i] }

// hash returns key's hash as Place does: the bits of its mix that did not
// pick the shard, shifted to the top. (used <= 16: the mask spares the
// test for a shift of 64.)
func (s *Shard[V, W, E]) hash(key uint64) uint64 { return mix(key) << (s.used & 63) }

// home is the first slot probed for key in a table of n slots.
func (s *Shard[V, W, E]) home(key uint64, n int) int { return slotOf(s.hash(key), n) }

// slotOf maps a key's hash (see hash) to a slot in [0, n).
func slotOf(hash uint64, n int) int {
	hi, _ := bits.Mul64(hash, uint64(n))
	return int(hi)
}

// find returns the slot holding key (never 0) and true; hash is the key's
// (see hash). For a key it does not hold it returns false and, if claim,
// the slot where it stores the key when that needs no growth (else -1), or
// if not claim the empty slot where the key would go (-1 in a shard not
// allocated yet). It calls nothing, so that a counter update's one call is
// a leaf.
func (s *Shard[V, W, E]) find(key, hash uint64, claim bool) (int, bool) {
	n := len(s.e)
	if n == 0 {
		return -1, false
	}
	i := slotOf(hash, n)
	for {
		k := s.e[i].key
		if k == key {
			return i, true
		}
		if k == 0 {
			if claim {
				if s.n >= s.cap || (s.n+1)*5 > n*4 && n < s.maxSlots {
					return -1, false // Make: evict, or grow
				}
				s.e[i].key = key
				s.n++
			}
			return i, false
		}
		if i++; i == n {
			i = 0
		}
	}
}

// Lookup returns the slot holding key, or -1. It allocates nothing.
func (s *Shard[V, W, E]) Lookup(key uint64) int {
	if s.n == 0 {
		return -1
	}
	if i, ok := s.find(key, s.hash(key), false); ok {
		return i
	}
	return -1
}

// Claim returns key's slot and true, or stores key, which is new, with a
// zero V and W and returns its slot and false; hash is the key's, from
// Place. It returns -1 (and false) for a new key when the shard must first
// be allocated, grow or make room: the caller then stores it with Make.
func (s *Shard[V, W, E]) Claim(key, hash uint64) (int, bool) {
	return s.find(key, hash, true)
}

// Make stores key, which the shard does not hold and Claim could not
// store, with a zero V and W, and returns its slot. It allocates or grows
// the shard by half; at the shard's cap it calls victim (with the shard
// locked), which returns the slot of the key to evict, having released
// what that key holds outside its slots, or -1 if it made room otherwise
// or could not. Make returns -1 if the shard is still full.
// Sharded.Evictions counts the evicted keys.
func (s *Shard[V, W, E]) Make(key uint64, victim func() int) int {
	if s.n >= s.cap {
		if i := victim(); i >= 0 {
			s.Delete(i)
			s.evictions++
		}
		if s.n >= s.cap {
			return -1
		}
	}
	if s.e == nil {
		s.alloc(min(minSlots, s.maxSlots))
	} else if n := len(s.e); (s.n+1)*5 > n*4 && n < s.maxSlots {
		s.grow(min(max(n*3/2, minSlots), s.maxSlots))
	}
	i, _ := s.find(key, s.hash(key), false)
	s.e[i].key = key
	s.n++
	return i
}

// alloc gives the shard n empty slots.
func (s *Shard[V, W, E]) alloc(n int) {
	s.e, s.side = make([]entry[V], n), make([]W, n)
}

// grow moves the shard's keys to a table of n slots.
func (s *Shard[V, W, E]) grow(n int) {
	old, oldSide := s.e, s.side
	s.alloc(n)
	for j := range old {
		k := old[j].key
		if k == 0 {
			continue
		}
		i := s.home(k, n)
		for s.e[i].key != 0 {
			if i++; i == n {
				i = 0
			}
		}
		s.e[i], s.side[i] = old[j], oldSide[j]
	}
}

// Delete empties slot i, shifting back the entries of its probe run: a slot
// after i (cyclically) may move into i. What the key holds elsewhere is the
// caller's to release first.
func (s *Shard[V, W, E]) Delete(i int) {
	n := len(s.e)
	j := i
	for {
		if j++; j == n {
			j = 0
		}
		k := s.e[j].key
		if k == 0 {
			break
		}
		if !homeIn(s.home(k, n), i, j) {
			s.e[i], s.side[i] = s.e[j], s.side[j]
			i = j
		}
	}
	var zero W
	s.e[i], s.side[i] = entry[V]{}, zero
	s.n--
}

// homeIn reports whether home h lies cyclically in (i, j]: in backward-shift
// deletion, the entry at j then stays where it is rather than filling the
// hole at i.
func homeIn(h, i, j int) bool {
	if i <= j {
		return i < h && h <= j
	}
	return i < h || h <= j
}

// All yields each key's slot and V. The loop body may Delete the slot it is
// given, and no other: a key shifted back into that slot is yielded next
// (a key can so be yielded twice, when one from the start of the table
// wraps around to its end).
func (s *Shard[V, W, E]) All() iter.Seq2[int, *V] {
	return func(yield func(int, *V) bool) {
		for i := 0; i < len(s.e); {
			k := s.e[i].key
			if k == 0 {
				i++
				continue
			}
			if !yield(i, &s.e[i].val) {
				return
			}
			if s.e[i].key == k {
				i++
			} // else deleted: a later key may have moved into i
		}
	}
}

// Sample yields up to sampleSize keys' slots and Vs, in slot order from a
// random position: the candidates from which a full shard picks the key to
// evict (sampled eviction, as Redis does). The loop body must not change
// the shard.
func (s *Shard[V, W, E]) Sample() iter.Seq2[int, *V] {
	return func(yield func(int, *V) bool) {
		n := len(s.e)
		i := sampleStart(&s.rng, n)
		for seen, scanned := 0, 0; seen < sampleSize && scanned < n; scanned++ {
			if s.e[i].key != 0 {
				seen++
				if !yield(i, &s.e[i].val) {
					return
				}
			}
			if i++; i == n {
				i = 0
			}
		}
	}
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

// leastUsed picks the key a full shard evicts from a sample: the first
// expired one, else the least used. The first sample is taken whatever its
// usage, so that a shard of infinite or NaN usages still evicts. Table and
// Distinct use it.
type leastUsed struct {
	at   int // the pick, once any
	any  bool
	use  float64
	done bool // at is expired
}

// offer considers slot i, of the given expiry and usage.
func (v *leastUsed) offer(i int, expired bool, usage float64) {
	switch {
	case v.done:
	case expired:
		v.at, v.done = i, true
	case !v.any || usage < v.use:
		v.at, v.use, v.any = i, usage, true
	}
}

package redis

import (
	"math/bits"
	"sync"
)

// A Counter's keys live in counterShards shards, each an open-addressing
// hash table (linear probing, backward-shift deletion) as counting.Table
// is, with the keys in one array (probed, eight to a cache line), the
// times the flush loop must next look at them in a second and their
// ledgers inline at the same index in a third: a decision costs a probe
// and one ledger, not a map lookup and a pointer to chase, and the flush
// loop's pass over every key reads the small arrays in order and only the
// ledgers that are due (Counter.dueLocked). A slot moves when
// its shard grows or a key before it is deleted, so nothing keeps a pointer
// to a ledger beyond the shard's lock: the flush keeps the key and the
// slot's generation, and looks the key up again to settle it.

const counterShards = 64

// zeroKey stands for the key 0, which marks an empty slot: keys 0 and
// zeroKey share a ledger (and a Redis key), a 2^-63 chance for hashed keys.
const zeroKey = 0x9e3779b97f4a7c15

const minSlots = 8

type cshard struct {
	mu   sync.Mutex
	keys []uint64   // 0: empty slot
	due  []int64    // at the key's index: see Counter.dueLocked
	ls   []keyState // ledgers, at their key's index
	n    int        // keys held
	gen  uint32     // generations handed out
	// dirty are the keys the next flush looks at: used since the last
	// one, or with something pending. The others (quiet keys holding a
	// lease) are looked at by a full pass every fullEvery intervals, so a
	// flush costs the keys in use, not every key the node holds.
	dirty []uint64
	// spare is the ledger of a key that found its shard full: judged as a
	// new key, and not kept.
	spare keyState
	_     [64]byte // keep neighbouring shards' locks off one cache line
}

// shardOf returns the shard of a stored key (never 0).
func (c *Counter) shardOf(key uint64) *cshard {
	return &c.shards[mix(key)&(counterShards-1)]
}

// home is the first slot probed for key in a table of n slots. The shard
// was picked by mix's low bits; the slot comes from its high bits.
func home(key uint64, n int) int {
	hi, _ := bits.Mul64(mix(key), uint64(n))
	return int(hi)
}

// findLocked returns the slot holding key, or the empty slot where it
// would go. The shard must have slots.
func (sh *cshard) findLocked(key uint64) (int, bool) {
	n := len(sh.keys)
	i := home(key, n)
	for {
		k := sh.keys[i]
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

// lookupLocked returns key's slot, or -1.
func (sh *cshard) lookupLocked(key uint64) int {
	if sh.n == 0 {
		return -1
	}
	if i, ok := sh.findLocked(key); ok {
		return i
	}
	return -1
}

// insertLocked adds key, which the shard does not hold, and returns its
// slot; the table grows while under maxSlots and 80% full.
func (sh *cshard) insertLocked(key uint64, maxSlots int) int {
	if n := len(sh.keys); (sh.n+1)*5 > n*4 && n < maxSlots {
		sh.growLocked(min(max(n*3/2, minSlots), maxSlots))
	}
	i, _ := sh.findLocked(key)
	sh.gen++
	sh.keys[i], sh.due[i] = key, 0
	sh.ls[i] = keyState{gen: sh.gen}
	sh.n++
	return i
}

func (sh *cshard) growLocked(n int) {
	keys, due, ls := sh.keys, sh.due, sh.ls
	sh.keys, sh.due, sh.ls = make([]uint64, n), make([]int64, n), make([]keyState, n)
	for j, k := range keys {
		if k == 0 {
			continue
		}
		i := home(k, n)
		for sh.keys[i] != 0 {
			if i++; i == n {
				i = 0
			}
		}
		sh.keys[i], sh.due[i], sh.ls[i] = k, due[j], ls[j]
	}
}

// deleteLocked empties slot i, shifting back the entries of its probe run:
// a slot after i (cyclically) may move into i.
func (sh *cshard) deleteLocked(i int) {
	n := len(sh.keys)
	j := i
	for {
		if j++; j == n {
			j = 0
		}
		k := sh.keys[j]
		if k == 0 {
			break
		}
		if h := home(k, n); !homeIn(h, i, j) {
			sh.keys[i], sh.due[i], sh.ls[i] = k, sh.due[j], sh.ls[j]
			i = j
		}
	}
	sh.keys[i], sh.due[i], sh.ls[i] = 0, 0, keyState{}
	sh.n--
}

// homeIn reports whether home h lies cyclically in (i, j]: the entry at j
// then stays where it is rather than filling the hole at i.
func homeIn(h, i, j int) bool {
	if i <= j {
		return i < h && h <= j
	}
	return i < h || h <= j
}

// queueLocked puts key on the next flush's list, once.
func (sh *cshard) queueLocked(key uint64, ks *keyState) {
	if !ks.queued {
		ks.queued = true
		sh.dirty = append(sh.dirty, key)
	}
}

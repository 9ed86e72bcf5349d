package redis

import "github.com/guardd/guardd/counting"

// A Counter's keys live in a counting.Sharded table of counterShards
// shards, as counting.Table's do: in each shard the keys and the times
// the flush loop must next look at them are in one array (probed, four to
// a cache line), their ledgers inline at the same index in a second: a
// decision costs a probe and one ledger, not a map lookup and a pointer to
// chase, and the flush loop's pass over every key reads the small array in
// order and only the ledgers that are due (Counter.dueLocked). A slot
// moves when its shard grows or a key before it is deleted, so nothing
// keeps a pointer to a ledger beyond the shard's lock: the flush keeps the
// key and the slot's generation, and looks the key up again to settle it.

const counterShards = 64

// cshard is one shard: per key, the Redis time (µs) from which a full pass
// must look at it (see Counter.dueLocked) beside the key, and its ledger.
type cshard = counting.Shard[int64, keyState, ledgers]

// ledgers is what a shard holds beside its keys.
type ledgers struct {
	gen uint32 // generations handed out
	// dirty are the keys the next flush looks at: used since the last
	// one, or with something pending. The others (quiet keys holding a
	// lease) are looked at by a full pass every fullEvery intervals, so a
	// flush costs the keys in use, not every key the node holds.
	dirty []uint64
	// spare is the ledger of a key that found its shard full: judged as a
	// new key, and not kept.
	spare keyState
}

// queueLocked puts key on the next flush's list, once.
func queueLocked(sh *cshard, key uint64, ks *keyState) {
	if !ks.queued {
		ks.queued = true
		sh.Ext.dirty = append(sh.Ext.dirty, key)
	}
}

package challenge

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// addrHash folds an address to 64 bits for the trackers' tables.
func addrHash(ip netip.Addr) uint64 {
	b := ip.Unmap().As16()
	var h uint64 = 0xcbf29ce484222325
	for _, c := range b {
		h ^= uint64(c)
		h *= 0x100000001b3
	}
	return h | 1 // 0 marks an empty slot
}

// addr32 is the 32-bit form of addrHash a clearance and the sharing table
// keep.
func addr32(ip netip.Addr) uint32 { return uint32(addrHash(ip)>>32) | 1 }

// trackerShards splits the trackers' tables so concurrent decisions rarely
// wait on one another.
const trackerShards = 64

// shareTracker counts the distinct addresses other than its owner's (the
// one it was issued to) that present one clearance, whether or not its
// network binding holds there, and revokes it when they reach limit: a
// clearance solved once and handed to a farm. The owner's own
// presentations, nearly all of them, touch the table only once some
// clearance has been revoked.
// Its memory is bounded: a direct-mapped table of clearance ids; a newer
// clearance takes an older one's slot, except that a revoked clearance
// keeps its slot until it expires. Safe for concurrent use.
type shareTracker struct {
	limit      int
	anyRevoked atomic.Bool
	shards     [trackerShards]shareShard
}

// shareAddrs is how many addresses an entry remembers; limit must be
// below. An entry is 64 bytes, one cache line.
const shareAddrs = 10

type shareShard struct {
	mu      sync.Mutex
	entries []shareEntry
}

type shareEntry struct {
	id      uint64
	expires int64 // Unix seconds
	addrs   [shareAddrs]uint32
	n       uint8
	revoked bool
}

func newShareTracker(slots, limit int) *shareTracker {
	t := &shareTracker{limit: limit}
	per := max(1, slots/trackerShards)
	for i := range t.shards {
		t.shards[i].entries = make([]shareEntry, per)
	}
	return t
}

// isRevoked reports whether clearance id is revoked, for its owner.
func (t *shareTracker) isRevoked(id uint64, now time.Time) bool {
	if !t.anyRevoked.Load() {
		return false
	}
	sh := &t.shards[id%trackerShards]
	sh.mu.Lock()
	e := &sh.entries[(id/trackerShards)%uint64(len(sh.entries))]
	revoked := e.id == id && e.revoked && e.expires > now.Unix()
	sh.mu.Unlock()
	return revoked
}

// see records that clearance id (expiring at expires, Unix seconds) was
// presented by ip, not its owner, and reports whether it is revoked.
func (t *shareTracker) see(id uint64, expires int64, ip netip.Addr, now time.Time) (revoked bool) {
	sh := &t.shards[id%trackerShards]
	a := addr32(ip)
	sh.mu.Lock()
	e := &sh.entries[(id/trackerShards)%uint64(len(sh.entries))]
	if e.id != id {
		if e.revoked && e.expires > now.Unix() {
			sh.mu.Unlock()
			return false // untracked: the slot keeps a revocation
		}
		*e = shareEntry{id: id, expires: expires}
	}
	if !e.revoked {
		known := false
		for _, x := range e.addrs[:e.n] {
			if x == a {
				known = true
				break
			}
		}
		if !known {
			if int(e.n) < len(e.addrs) {
				e.addrs[e.n] = a
			}
			if e.n < 255 {
				e.n++
			}
			if int(e.n) >= t.limit {
				e.revoked = true
				t.anyRevoked.Store(true)
			}
		}
	}
	revoked = e.revoked
	sh.mu.Unlock()
	return revoked
}

// unsolvedTracker counts, per client address, the challenges shown since
// it last passed one. Bounded like shareTracker; an entry older than window
// starts again from zero. Safe for concurrent use.
type unsolvedTracker struct {
	window time.Duration
	shards [trackerShards]unsolvedShard
}

type unsolvedShard struct {
	mu      sync.Mutex
	entries []unsolvedEntry
}

type unsolvedEntry struct {
	addr  uint64
	since int64 // Unix nanoseconds of the first unsolved challenge
	shown uint32
}

func newUnsolvedTracker(slots int, window time.Duration) *unsolvedTracker {
	t := &unsolvedTracker{window: window}
	per := max(1, slots/trackerShards)
	for i := range t.shards {
		t.shards[i].entries = make([]unsolvedEntry, per)
	}
	return t
}

func (t *unsolvedTracker) slot(ip netip.Addr) (*unsolvedShard, uint64, int) {
	a := addrHash(ip)
	sh := &t.shards[a%trackerShards]
	return sh, a, int((a / trackerShards) % uint64(len(sh.entries)))
}

// shown counts a challenge shown to ip and returns how many it has been
// shown without passing.
func (t *unsolvedTracker) shown(ip netip.Addr, now time.Time) int {
	sh, a, i := t.slot(ip)
	sh.mu.Lock()
	e := &sh.entries[i]
	if e.addr != a || now.UnixNano()-e.since > int64(t.window) {
		*e = unsolvedEntry{addr: a, since: now.UnixNano()}
	}
	e.shown++
	n := int(e.shown)
	sh.mu.Unlock()
	return n
}

// reset forgets ip's count: it passed, or it was escalated.
func (t *unsolvedTracker) reset(ip netip.Addr) {
	sh, a, i := t.slot(ip)
	sh.mu.Lock()
	if sh.entries[i].addr == a {
		sh.entries[i] = unsolvedEntry{}
	}
	sh.mu.Unlock()
}

package counting

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"time"
)

// Distinct counts, per key, how many distinct values were seen in a sliding
// period: distinct paths per address, distinct addresses per cookie,
// distinct user agents per address. Each key holds the fingerprints of
// its values in the current aligned window and in the previous one: up to
// four per window in its slot (DistinctSlotBytes), and beyond that in a
// block of its own (DistinctBlockBytes) that turns into a HyperLogLog
// sketch of DistinctRegisters registers per window, so its memory is
// bounded whatever the number of values. Most keys (an address's user
// agents, its missing pages) hold a few values and never take a block.
// It is safe for concurrent use: keys are spread over the shards of a
// Sharded table, as in Table.
//
// The estimate slides as the sliding window counter does: values seen in the
// current window count fully, values seen only in the previous window count
// with the weight of the previous window's overlap with the period,
//
//	|C| + (|C ∪ P| - |C|) * (period-elapsed)/period
//
// where |C| and |C ∪ P| are exact up to 32 values per window (fingerprints
// kept in the registers' bytes) and HyperLogLog estimates beyond (linear
// counting below 320 values; mean relative error about 7%, measured in
// TestDistinctAccuracy). Thresholds up to 32 are therefore exact. A key's
// estimate is recomputed only when a value raises a register, so an Add of a
// value already seen costs a hash probe and a comparison.
type Distinct struct {
	period int64
	limit  float64
	cap    int // keys per shard
	keys   Sharded[dslot, struct{}, distinctShard]
}

// DistinctRegisters is the number of HyperLogLog registers per window. The
// relative standard error is 1.04/√128 = 9% for large counts.
const DistinctRegisters = 128

// DistinctSlotBytes is the memory of one key, before the table's load factor
// (TestDistinctSlotSize checks it), and DistinctBlockBytes that of the
// block a key takes while one of its windows holds more than four values.
const (
	DistinctSlotBytes  = 64
	DistinctBlockBytes = 2 * DistinctRegisters
)

const registerBits = 7 // log2(DistinctRegisters)

// dslot is one key, held beside it (64 bytes in all): the start of its current window, the cached estimates
// of the current window and of the union with the previous one, and the
// fingerprints of both windows' values ([0] current window, [1] previous)
// while each holds at most sparseInline; else its block holds them.
type dslot struct {
	t        int64
	cur, uni float32
	n        [2]uint8 // values held exactly, or dense
	_        [2]uint8
	blk      int32 // 1 + the index of the key's block in distinctShard.blocks; 0: none
	fps      [2][sparseInline]uint32
}

// sparseInline is how many fingerprints a window keeps in its slot.
const sparseInline = 4

// dblock is the registers of both windows of a key that outgrew its slot:
// up to sparseMax fingerprints in their bytes, then HyperLogLog registers.
type dblock [2][DistinctRegisters]uint8

type dshard = Shard[dslot, struct{}, distinctShard]

// distinctShard is what a Distinct's shard holds beside its keys.
type distinctShard struct {
	blocks []dblock
	free   []int32 // indexes of unused blocks
	late   uint64
}

// DistinctConfig configures a Distinct table. Period and Limit are
// required; MaxKeys and Shards default as in Config.
type DistinctConfig struct {
	Period  time.Duration
	Limit   float64 // Exceeded when the estimate is over Limit
	MaxKeys int
	Shards  int
}

// NewDistinct validates cfg and returns an empty table.
func NewDistinct(cfg DistinctConfig) (*Distinct, error) {
	if cfg.Period <= 0 || cfg.Period > MaxPeriod {
		return nil, fmt.Errorf("counting: distinct: period %v: must be > 0 and <= %v", cfg.Period, MaxPeriod)
	}
	if !(cfg.Limit > 0) || math.IsInf(cfg.Limit, 0) {
		return nil, fmt.Errorf("counting: distinct: limit %v: must be a positive finite number", cfg.Limit)
	}
	if cfg.MaxKeys < 0 || cfg.Shards < 0 || cfg.Shards > 1<<16 {
		return nil, fmt.Errorf("counting: distinct: max keys %d, shards %d: must be >= 0 (shards <= %d)", cfg.MaxKeys, cfg.Shards, 1<<16)
	}
	// A key is two Table slots, and up to eight more while it holds more
	// than four values in a window: the cap is an eighth of Table's, which
	// keeps a full table under 47 MB at the default (13 MB of slots).
	n, perShard := shardLayout(cfg.MaxKeys, 8, cfg.Shards)
	d := &Distinct{period: int64(cfg.Period), limit: cfg.Limit, cap: perShard}
	d.keys.Init(n, perShard)
	return d, nil
}

func (d *Distinct) windowStart(now int64) int64 {
	r := now % d.period
	if r < 0 {
		r += d.period
	}
	return now - r
}

// expired: nothing of the key is inside the period any more.
func (d *Distinct) expired(sl *dslot, now int64) bool { return now-sl.t >= 2*d.period }

// Add records value (a hash of the characteristic's value, such as
// Hash of the path) for key at event time now (unix nanoseconds) and returns
// the key's estimate of distinct values in the period after it. It
// allocates nothing once the key's shard has grown to hold it.
func (d *Distinct) Add(key, value uint64, now int64) Result {
	s, key, hash := d.keys.Place(key)
	s.Lock()
	i, found := s.Claim(key, hash)
	if i < 0 {
		i = s.Make(key, func() int { return d.victimLocked(s, now) })
	}
	if !found {
		*s.Val(i) = dslot{t: d.windowStart(now)}
	}
	sl := s.Val(i)
	k := dkey{sl, s.Ext.block(sl)}
	d.rotate(k, now)
	if k.b != nil && sl.n[0] == 0 && sl.n[1] <= sparseInline {
		k.b = s.Ext.unwiden(sl, k.b) // rotated out of the block (a late value may go back in)
	}
	w := 0 // the window the event falls in
	if now < sl.t {
		if now < sl.t-d.period {
			s.Ext.late++
			r := d.result(sl, now)
			s.Unlock()
			return r
		}
		w = 1
	}
	f := uint32(splitmix(value) >> 32)
	if k.b == nil && sl.n[w] == sparseInline && !k.holds(w, f) {
		k.b = s.Ext.widen(sl, d.cap)
	}
	switch k.insert(w, f) {
	case addedExact:
		// Both windows exact: the union grows by one unless the other
		// window holds the value; the full count is quadratic in them.
		if o := 1 - w; sl.n[o] != dense {
			sl.cur = float32(sl.n[0])
			if !k.holds(o, f) {
				sl.uni++
			}
			break
		}
		d.estimate(k)
	case changedSketch:
		d.estimate(k)
	}
	r := d.result(sl, now)
	s.Unlock()
	return r
}

// AddDistinct is Add, for a caller that takes Windows and Distinct alike.
func (d *Distinct) AddDistinct(key, value uint64, now int64) Result { return d.Add(key, value, now) }

// Peek returns key's estimate at now without recording anything.
func (d *Distinct) Peek(key uint64, now int64) Result {
	s, key, _ := d.keys.Place(key)
	s.Lock()
	defer s.Unlock()
	i := s.Lookup(key)
	if i < 0 || d.expired(s.Val(i), now) {
		return Result{Remaining: d.limit}
	}
	sl := *s.Val(i) // a copy: Peek changes nothing
	k := dkey{&sl, nil}
	if sl.blk != 0 {
		b := s.Ext.blocks[sl.blk-1]
		k.b = &b
	}
	d.rotate(k, now)
	return d.result(&sl, now)
}

// dkey is one key's state: its slot, and its block if it has one.
type dkey struct {
	*dslot
	b *dblock // nil: the fingerprints are in the slot
}

// block returns sl's block, or nil.
func (s *distinctShard) block(sl *dslot) *dblock {
	if sl.blk == 0 {
		return nil
	}
	return &s.blocks[sl.blk-1]
}

// widen gives sl a block and moves its fingerprints into it, as the bytes
// of its registers. A shard's blocks are reused once freed, and never more
// than its keys (limit).
func (s *distinctShard) widen(sl *dslot, limit int) *dblock {
	var i int32
	if n := len(s.free); n > 0 {
		i, s.free = s.free[n-1], s.free[:n-1]
	} else {
		if n := len(s.blocks); n == cap(s.blocks) {
			b := make([]dblock, n, max(min(2*n, limit), n+1, 4))
			copy(b, s.blocks)
			s.blocks = b
		}
		s.blocks = append(s.blocks, dblock{})
		i = int32(len(s.blocks) - 1)
	}
	b := &s.blocks[i]
	*b = dblock{}
	for w := range 2 {
		for j := range int(sl.n[w]) { // a slot's window is never dense
			binary.LittleEndian.PutUint32(b[w][4*j:], sl.fps[w][j])
		}
	}
	sl.blk = i + 1
	return b
}

// unwiden moves back into sl the fingerprints of its block, whose current
// window is empty and previous one holds at most sparseInline, and frees
// the block.
func (s *distinctShard) unwiden(sl *dslot, b *dblock) *dblock {
	sl.fps = [2][sparseInline]uint32{}
	for j := range int(sl.n[1]) {
		sl.fps[1][j] = binary.LittleEndian.Uint32(b[1][4*j:])
	}
	s.freeBlock(sl)
	return nil
}

// freeBlock frees sl's block, if it has one.
func (s *distinctShard) freeBlock(sl *dslot) {
	if sl.blk != 0 {
		s.free = append(s.free, sl.blk-1)
		sl.blk = 0
	}
}

// rotate moves k's windows forward to the one holding now.
func (d *Distinct) rotate(k dkey, now int64) {
	sl := k.dslot
	if now < sl.t+d.period {
		return
	}
	if now < sl.t+2*d.period {
		if k.b != nil {
			k.b[1] = k.b[0]
		} else {
			sl.fps[1] = sl.fps[0]
		}
		sl.t += d.period
		sl.n[1] = sl.n[0]
	} else { // a pause of two periods or more: nothing is left of either window
		if k.b != nil {
			k.b[1] = [DistinctRegisters]uint8{}
		} else {
			sl.fps[1] = [sparseInline]uint32{}
		}
		sl.n[1] = 0
		sl.t = d.windowStart(now)
	}
	if k.b != nil {
		k.b[0] = [DistinctRegisters]uint8{}
	} else {
		sl.fps[0] = [sparseInline]uint32{}
	}
	sl.n[0] = 0
	d.estimate(k)
}

// estimate refreshes the cached estimates of k.
func (d *Distinct) estimate(sl dkey) {
	if sl.n[0] != dense && sl.n[1] != dense {
		// Both exact: the union is counted exactly too.
		u := int(sl.n[0])
		for i := range int(sl.n[1]) {
			if !sl.holds(0, sl.fp(1, i)) {
				u++
			}
		}
		sl.cur, sl.uni = float32(sl.n[0]), float32(u)
		return
	}
	var cur, union [DistinctRegisters]uint8
	sl.registers(0, &cur)
	sl.registers(1, &union)
	maxRegisters(&union, &cur)
	if sl.n[0] == dense {
		sl.cur = float32(hllEstimate(&cur))
	} else {
		sl.cur = float32(sl.n[0])
	}
	sl.uni = float32(hllEstimate(&union))
}

// A window holds its values exactly, as up to sparseMax 32-bit fingerprints
// in the bytes of its registers, until one more arrives; it then turns into
// HyperLogLog registers (n = dense). Counts up to sparseMax are therefore
// exact but for fingerprint collisions (2^-32 per pair).
const (
	sparseMax = DistinctRegisters / 4
	dense     = 0xff
)

func (sl dkey) fp(w, i int) uint32 {
	if sl.b == nil {
		return sl.fps[w][i]
	}
	return binary.LittleEndian.Uint32(sl.b[w][4*i:])
}

func (sl dkey) holds(w int, f uint32) bool {
	if sl.b == nil {
		for _, g := range sl.fps[w][:sl.n[w]] {
			if g == f {
				return true
			}
		}
		return false
	}
	for i := range int(sl.n[w]) {
		if sl.fp(w, i) == f {
			return true
		}
	}
	return false
}

// place returns the register and rank of fingerprint f.
func place(f uint32) (int, uint8) {
	return int(f >> (32 - registerBits)), uint8(bits.LeadingZeros32(f<<registerBits|1<<(registerBits-1)) + 1)
}

// registers writes window w's registers into out (which it overwrites).
func (sl dkey) registers(w int, out *[DistinctRegisters]uint8) {
	if sl.n[w] == dense {
		*out = sl.b[w]
		return
	}
	*out = [DistinctRegisters]uint8{}
	for i := range int(sl.n[w]) {
		idx, rank := place(sl.fp(w, i))
		out[idx] = max(out[idx], rank)
	}
}

// What an insert changed.
const (
	unchanged     = iota // a repeat, or a value under its register's rank
	addedExact           // a new value in a window still exact
	changedSketch        // the move to registers, or a raised register
)

// insert adds fingerprint f to window w and reports what changed. A dense
// window's repeats and values under their register's rank change nothing,
// and cost no estimate.
//
// A key without a block must have room in its slot (Add widens it first).
func (sl dkey) insert(w int, f uint32) int {
	changed := unchanged
	if n := sl.n[w]; n != dense {
		if sl.holds(w, f) {
			return unchanged
		}
		if sl.b == nil {
			sl.fps[w][n] = f
			sl.n[w]++
			return addedExact
		}
		if n < sparseMax {
			binary.LittleEndian.PutUint32(sl.b[w][4*n:], f)
			sl.n[w]++
			return addedExact
		}
		var reg [DistinctRegisters]uint8
		sl.registers(w, &reg)
		sl.b[w], sl.n[w] = reg, dense
		changed = changedSketch
	}
	idx, rank := place(f)
	if rank <= sl.b[w][idx] {
		return changed
	}
	sl.b[w][idx] = rank
	return changedSketch
}

// maxRank is the highest rank place gives: a fingerprint's 32 bits less
// the register's, plus one.
const maxRank = 32 - registerBits + 1

// maxRegisters sets each register of u to the larger of it and o's,
// eight at a time: ranks are under 128, so a byte's top bit holds, after
// (u|0x80) - o, whether u's byte is the larger, and no byte borrows from
// the next.
func maxRegisters(u, o *[DistinctRegisters]uint8) {
	const hi = 0x8080808080808080
	for i := 0; i < DistinctRegisters; i += 8 {
		a, b := binary.LittleEndian.Uint64(u[i:]), binary.LittleEndian.Uint64(o[i:])
		ge := ((a | hi) - b) & hi >> 7 * 0xff // 0xff where a >= b
		binary.LittleEndian.PutUint64(u[i:], a&ge|b&^ge)
	}
}

// b2i is 1 for true, 0 for false, without a branch.
func b2i(b bool) uint8 {
	var u uint8
	if b {
		u = 1
	}
	return u
}

// pow2neg[r] is 2^-r.
var pow2neg = func() (p [66]float64) {
	for r := range p {
		p[r] = math.Ldexp(1, -r)
	}
	return p
}()

// hllEstimate is the HyperLogLog estimate of one register array, with
// linear counting for small cardinalities. The sum of 2^-rank is made in
// four independent sums, not one chain of dependent adds: every partial
// sum is a multiple of 2^-maxRank under 2^8, exact in a float64, so the
// order of the adds cannot change the result by a bit.
func hllEstimate(reg *[DistinctRegisters]uint8) float64 {
	const m = DistinctRegisters
	var s0, s1, s2, s3 float64
	var z0, z1, z2, z3 int
	for i := 0; i < m; i += 4 {
		r0, r1, r2, r3 := reg[i], reg[i+1], reg[i+2], reg[i+3]
		s0 += pow2neg[r0&63]
		s1 += pow2neg[r1&63]
		s2 += pow2neg[r2&63]
		s3 += pow2neg[r3&63]
		z0 += int(b2i(r0 == 0))
		z1 += int(b2i(r1 == 0))
		z2 += int(b2i(r2 == 0))
		z3 += int(b2i(r3 == 0))
	}
	sum, zeros := (s0+s1)+(s2+s3), z0+z1+z2+z3
	if zeros == m {
		return 0
	}
	e := 0.7213 / (1 + 1.079/m) * m * m / sum // alpha_m for m >= 128
	if e <= 2.5*m && zeros > 0 {
		e = m * math.Log(float64(m)/float64(zeros))
	}
	return e
}

func (d *Distinct) usage(sl *dslot, now int64) float64 {
	if d.expired(sl, now) {
		return 0
	}
	if now >= sl.t+d.period { // the current window is over: only its values remain, weighted
		elapsed := now - sl.t - d.period
		return float64(sl.cur) * float64(d.period-elapsed) / float64(d.period)
	}
	elapsed := max(now-sl.t, 0)
	cur, uni := float64(sl.cur), float64(sl.uni)
	return cur + max(uni-cur, 0)*float64(d.period-elapsed)/float64(d.period)
}

func (d *Distinct) result(sl *dslot, now int64) Result {
	c := d.usage(sl, now)
	r := Result{Count: c, Remaining: max(d.limit-c, 0)}
	if end := sl.t + 2*d.period - now; end > 0 {
		r.Reset = time.Duration(end)
	}
	if c > d.limit {
		r.Exceeded = true
		r.RetryAfter = r.Reset
	}
	return r
}

// victimLocked picks the key a full shard evicts, and releases its block:
// an expired key, or the sampled key with the fewest distinct values.
func (d *Distinct) victimLocked(s *dshard, now int64) int {
	var v leastUsed
	for i, sl := range s.Sample() {
		v.offer(i, d.expired(sl, now), d.usage(sl, now))
	}
	return d.releaseLocked(s, v.at)
}

// releaseLocked frees the block of the key in slot i, if it has one,
// before the slot is deleted, and returns i.
func (d *Distinct) releaseLocked(s *dshard, i int) int {
	s.Ext.freeBlock(s.Val(i))
	return i
}

// Sweep drops the keys with nothing left in the period at now and returns
// how many it dropped.
func (d *Distinct) Sweep(now int64) int {
	return d.keys.Sweep(func(s *dshard, i int) bool {
		return d.expired(s.Val(i), now) && d.releaseLocked(s, i) >= 0
	})
}

// Len returns the number of keys tracked.
func (d *Distinct) Len() int { return d.keys.Len() }

// Evictions returns how many keys were dropped to stay under MaxKeys.
func (d *Distinct) Evictions() uint64 { return d.keys.Evictions() }

// Late returns how many values were ignored for being older than the
// previous window.
func (d *Distinct) Late() uint64 { return d.keys.Sum(func(s *dshard) uint64 { return s.Ext.late }) }

// splitmix is SplitMix64's finaliser: every input bit reaches the top bits
// that pick a register.
func splitmix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

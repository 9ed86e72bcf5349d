package counting

import (
	"math/rand/v2"
	"testing"
	"time"
)

// refKey is one key of Distinct as it was before keys kept their first
// values in their slots (with the previous window emptied after a pause of
// two periods, which it was not): both windows' registers always at hand, holding
// up to sparseMax fingerprints in their bytes. The compact slots must give
// the same results to the last bit (TestDistinctAsReference).
type refKey struct {
	t        int64
	cur, uni float32
	n        [2]uint8
	reg      [2][DistinctRegisters]uint8
	seen     bool
}

func (k *refKey) fp(w, i int) uint32 {
	b := k.reg[w][4*i:]
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func (k *refKey) holds(w int, f uint32) bool {
	for i := range int(k.n[w]) {
		if k.fp(w, i) == f {
			return true
		}
	}
	return false
}

func (k *refKey) registers(w int, out *[DistinctRegisters]uint8) {
	if k.n[w] == dense {
		*out = k.reg[w]
		return
	}
	*out = [DistinctRegisters]uint8{}
	for i := range int(k.n[w]) {
		idx, rank := place(k.fp(w, i))
		out[idx] = max(out[idx], rank)
	}
}

func (k *refKey) insert(w int, f uint32) int {
	changed := unchanged
	if n := k.n[w]; n != dense {
		if k.holds(w, f) {
			return unchanged
		}
		if n < sparseMax {
			b := k.reg[w][4*n:]
			b[0], b[1], b[2], b[3] = byte(f), byte(f>>8), byte(f>>16), byte(f>>24)
			k.n[w]++
			return addedExact
		}
		var reg [DistinctRegisters]uint8
		k.registers(w, &reg)
		k.reg[w], k.n[w] = reg, dense
		changed = changedSketch
	}
	idx, rank := place(f)
	if rank <= k.reg[w][idx] {
		return changed
	}
	k.reg[w][idx] = rank
	return changedSketch
}

func (k *refKey) estimate() {
	if k.n[0] != dense && k.n[1] != dense {
		u := int(k.n[0])
		for i := range int(k.n[1]) {
			if !k.holds(0, k.fp(1, i)) {
				u++
			}
		}
		k.cur, k.uni = float32(k.n[0]), float32(u)
		return
	}
	var cur, union [DistinctRegisters]uint8
	k.registers(0, &cur)
	k.registers(1, &union)
	for i := range union {
		union[i] = max(union[i], cur[i])
	}
	if k.n[0] == dense {
		k.cur = float32(hllEstimate(&cur))
	} else {
		k.cur = float32(k.n[0])
	}
	k.uni = float32(hllEstimate(&union))
}

func (k *refKey) rotate(d *Distinct, now int64) {
	if now < k.t+d.period {
		return
	}
	if now < k.t+2*d.period {
		k.reg[1] = k.reg[0]
		k.t += d.period
		k.n[1] = k.n[0]
	} else {
		k.reg[1] = [DistinctRegisters]uint8{}
		k.n[1] = 0
		k.t = d.windowStart(now)
	}
	k.reg[0] = [DistinctRegisters]uint8{}
	k.n[0] = 0
	k.estimate()
}

func (k *refKey) result(d *Distinct, now int64) Result {
	return d.result(&dslot{t: k.t, cur: k.cur, uni: k.uni}, now)
}

func (k *refKey) add(d *Distinct, value uint64, now int64) Result {
	if !k.seen {
		*k = refKey{t: d.windowStart(now), seen: true}
	}
	k.rotate(d, now)
	w := 0
	if now < k.t {
		if now < k.t-d.period {
			return k.result(d, now)
		}
		w = 1
	}
	switch f := uint32(splitmix(value) >> 32); k.insert(w, f) {
	case addedExact:
		if o := 1 - w; k.n[o] != dense {
			k.cur = float32(k.n[0])
			if !k.holds(o, f) {
				k.uni++
			}
			break
		}
		k.estimate()
	case changedSketch:
		k.estimate()
	}
	return k.result(d, now)
}

// TestDistinctAsReference: keys that keep up to four values per window in
// their slots, take a block beyond and give it back when a rotation leaves
// them few, give exactly the results of the registers they replaced, Add
// after Add and in Peek: keys of 1 to 40 values and of hundreds, repeats,
// late values, pauses of under one to over two periods, many keys sharing
// the shards' blocks.
func TestDistinctAsReference(t *testing.T) {
	const period = int64(time.Minute)
	d := newDistinct(t, time.Minute, 12, 0)
	rng := rand.New(rand.NewPCG(7, 8))
	const keys = 300
	refs := make([]refKey, keys)
	sizes := make([]uint64, keys)
	for k := range sizes {
		sizes[k] = []uint64{1, 2, 3, 4, 5, 6, 9, 33, 40, 700}[k%10]
	}
	now := int64(time.Hour)
	blocks := 0
	for i := range 300_000 {
		now += int64(time.Millisecond) * int64(rng.IntN(40))
		if i%20_000 == 0 { // a pause: some keys rotate once, some twice or more
			now += []int64{period / 2, period, 2 * period, 3 * period}[i/20_000%4]
		}
		k := rng.IntN(keys)
		v := rng.Uint64N(sizes[k])
		if rng.IntN(4) == 0 { // now and then a value new to the key
			v = rng.Uint64()
		}
		at := now
		if rng.IntN(50) == 0 {
			at -= period * int64(rng.IntN(3)) // late, possibly too late
		}
		key := uint64(k)*0x9e3779b97f4a7c15 + 1
		got := d.Add(key, v, at)
		want := refs[k].add(d, v, at)
		if got != want {
			t.Fatalf("Add %d, key %d (%d values), at %v: %+v, want %+v", i, k, sizes[k], time.Duration(at-now), got, want)
		}
		if i%1000 == 0 {
			k := rng.IntN(keys)
			if !refs[k].seen {
				continue
			}
			key := uint64(k)*0x9e3779b97f4a7c15 + 1
			peek := now + int64(rng.IntN(int(3*period)))
			ref := refs[k]                     // a copy: Peek changes nothing
			want := Result{Remaining: d.limit} // an expired key reads as unused
			if !d.expired(&dslot{t: ref.t}, peek) {
				ref.rotate(d, peek)
				want = ref.result(d, peek)
			}
			if got := d.Peek(key, peek); got != want {
				t.Fatalf("Peek %d, key %d at +%v: %+v, want %+v", i, k, time.Duration(peek-now), got, want)
			}
		}
		if i%50_000 == 0 {
			n := 0
			for si := range d.keys.shards {
				x := &d.keys.shards[si].Ext
				n += len(x.blocks) - len(x.free)
			}
			blocks = max(blocks, n)
		}
	}
	if blocks == 0 {
		t.Fatal("no key took a block: the test proves little")
	}
}

// TestDistinctBlocks: a key takes a block only past four values in a
// window, gives it back when its windows rotate down to a few values, and
// when it is swept or evicted; blocks are reused, so a shard holds no more
// than it ever needed at once.
func TestDistinctBlocks(t *testing.T) {
	const period = int64(time.Minute)
	d := newDistinct(t, time.Minute, 100, 64) // 8 keys in all (an eighth), in one shard
	inUse := func() (used, held int) {
		for si := range d.keys.shards {
			s := &d.keys.shards[si].Ext
			used += len(s.blocks) - len(s.free)
			held += len(s.blocks)
		}
		return used, held
	}
	now := int64(time.Hour)
	for k := range uint64(8) {
		for v := range 4 + k%2 { // odd keys: five values
			d.Add(k+1, v, now)
		}
	}
	if used, _ := inUse(); used != 4 {
		t.Fatalf("%d blocks in use, want 4 (the keys with five values)", used)
	}
	for range 2 { // a window later, then another: the five values leave both windows
		now += period
		for k := range uint64(8) {
			d.Add(k+1, 99, now)
		}
	}
	if used, held := inUse(); used != 0 || held != 4 {
		t.Fatalf("%d blocks in use of %d, want 0 of 4 after the windows rotated", used, held)
	}
	for round := range 3 { // keys that come and go reuse the blocks
		for k := range uint64(8) {
			for v := range uint64(6) {
				d.Add(k+1, v+uint64(round)<<8, now)
			}
		}
		if used, held := inUse(); used != 8 || held != 8 {
			t.Fatalf("round %d: %d blocks in use of %d, want 8 of 8", round, used, held)
		}
		now += 3 * period
		if n := d.Sweep(now); n != 8 {
			t.Fatalf("round %d: swept %d keys, want 8", round, n)
		}
		if used, _ := inUse(); used != 0 {
			t.Fatalf("round %d: %d blocks in use after the sweep", round, used)
		}
	}
	for k := range uint64(100) { // a flood of new keys of six values evicts the old ones
		for v := range uint64(6) {
			d.Add(1000+k, v, now)
		}
	}
	if used, held := inUse(); used != d.Len() || held > 8+1 {
		t.Fatalf("after evictions: %d blocks in use of %d for %d keys", used, held, d.Len())
	}
}

// TestDistinctPause: after a pause of two periods or more nothing is left
// of a key's windows: one new value counts one, whatever came before (the
// previous window once kept the count of the values it had lost, as that
// many fingerprints of 0).
func TestDistinctPause(t *testing.T) {
	for _, before := range []uint64{4, 5, 30, 700} { // in the slot, in a block, dense
		d := newDistinct(t, time.Minute, 5, 0)
		t0 := int64(time.Hour)
		for v := range before {
			d.Add(1, v+1, t0)
		}
		for _, pause := range []time.Duration{2 * time.Minute, 150 * time.Second, 10 * time.Minute} {
			t0 += int64(pause)
			if r := d.Add(1, 999+uint64(pause), t0); r.Count != 1 {
				t.Errorf("%d values, then a pause of %v, then one new value: count %v, want 1", before, pause, r.Count)
			}
		}
	}
}

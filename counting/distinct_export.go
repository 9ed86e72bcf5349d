package counting

import (
	"encoding/binary"
	"fmt"
)

// Sketch is one window of one key of a Distinct table, as Sketches copies
// it out: the 32-bit fingerprints of its values while it holds at most 32
// (exact), HyperLogLog registers beyond (dense). Two sketches of the same
// window made on different nodes merge with Union into the sketch of the
// union of their values, the same one a single table that saw every value
// would hold (but for the order of the fingerprints): the fleet tier
// (counting/redis) shares distinct counts this way. The zero value is an
// empty window. It is a value: copying it copies the window.
type Sketch struct {
	n uint8 // values held exactly, or dense
	b [DistinctRegisters]uint8
}

// Sketches copies key's two windows at now, the current one into cur and
// the previous one into prev, and returns the start of the current window
// (unix ns); ok is false, and cur and prev are empty, when the table holds
// nothing of key in the period. It changes nothing in d.
func (d *Distinct) Sketches(key uint64, now int64, cur, prev *Sketch) (start int64, ok bool) {
	*cur, *prev = Sketch{}, Sketch{}
	s, key, _ := d.keys.Place(key)
	s.Lock()
	defer s.Unlock()
	i := s.Lookup(key)
	if i < 0 || d.expired(s.Val(i), now) {
		return d.windowStart(now), false
	}
	sl := *s.Val(i) // a copy: nothing changes in d
	k := dkey{&sl, nil}
	var b dblock
	if sl.blk != 0 {
		b = s.Ext.blocks[sl.blk-1]
		k.b = &b
	}
	d.rotate(k, now)
	for w, out := range [2]*Sketch{cur, prev} {
		out.n = sl.n[w]
		if sl.n[w] == dense {
			out.b = k.b[w]
			continue
		}
		for j := range int(sl.n[w]) {
			binary.LittleEndian.PutUint32(out.b[4*j:], k.fp(w, j))
		}
	}
	return sl.t, true
}

// WindowStart returns the start of the window that holds now, as d aligns
// it: a multiple of the period since the Unix epoch, so that every node
// of a fleet agrees on it.
func (d *Distinct) WindowStart(now int64) int64 { return d.windowStart(now) }

// Period returns d's period in nanoseconds.
func (d *Distinct) Period() int64 { return d.period }

// Limit returns d's limit.
func (d *Distinct) Limit() float64 { return d.limit }

// ResultOf is the Result d gives at now for a key whose current window
// starts at start, holds about cur distinct values, and about uni together
// with the previous window: what Add returns, for estimates made out of
// sketches merged outside d.
func (d *Distinct) ResultOf(start int64, cur, uni float64, now int64) Result {
	sl := dslot{t: start, cur: float32(cur), uni: float32(uni)}
	return d.result(&sl, now)
}

// Empty reports whether s holds no value.
func (s *Sketch) Empty() bool { return s.n == 0 }

// Exact returns the number of values s holds, and false when it holds
// registers instead (more than 32 values).
func (s *Sketch) Exact() (int, bool) { return int(s.n), s.n != dense }

// Estimate returns the number of distinct values in s: exact while it
// holds fingerprints, the HyperLogLog estimate beyond.
func (s *Sketch) Estimate() float64 {
	if s.n == dense {
		return hllEstimate(&s.b)
	}
	return float64(s.n)
}

// UnionEstimate returns the number of distinct values in s and o together,
// as a table estimates a key's two windows: exact while both hold
// fingerprints (even beyond 32 together), from the maximum of their
// registers otherwise.
func (s *Sketch) UnionEstimate(o *Sketch) float64 {
	if s.n != dense && o.n != dense {
		u := int(s.n)
		for i := range int(o.n) {
			if !s.holds(o.fp(i)) {
				u++
			}
		}
		return float64(u)
	}
	var a, b [DistinctRegisters]uint8
	s.registers(&a)
	o.registers(&b)
	maxRegisters(&a, &b)
	return hllEstimate(&a)
}

func (s *Sketch) fp(i int) uint32 { return binary.LittleEndian.Uint32(s.b[4*i:]) }

func (s *Sketch) holds(f uint32) bool {
	for i := range int(s.n) {
		if s.fp(i) == f {
			return true
		}
	}
	return false
}

// registers writes s's registers into out.
func (s *Sketch) registers(out *[DistinctRegisters]uint8) {
	if s.n == dense {
		*out = s.b
		return
	}
	*out = [DistinctRegisters]uint8{}
	for i := range int(s.n) {
		idx, rank := place(s.fp(i))
		out[idx] = max(out[idx], rank)
	}
}

// Insert adds value (the hash a Distinct's Add takes) to s, as a table's
// window takes it, and reports whether s changed.
func (s *Sketch) Insert(value uint64) bool {
	f := uint32(splitmix(value) >> 32)
	changed := false
	if s.n != dense {
		if s.holds(f) {
			return false
		}
		if s.n < sparseMax {
			binary.LittleEndian.PutUint32(s.b[4*int(s.n):], f)
			s.n++
			return true
		}
		var reg [DistinctRegisters]uint8
		s.registers(&reg)
		s.b, s.n, changed = reg, dense, true
	}
	idx, rank := place(f)
	if rank <= s.b[idx] {
		return changed
	}
	s.b[idx] = rank
	return true
}

// Union merges o into s: s then holds the union of both windows' values,
// exactly while it has at most 32, as registers beyond.
func (s *Sketch) Union(o *Sketch) {
	if o.n == 0 {
		return
	}
	if s.n != dense && o.n != dense {
		var add [sparseMax]uint32
		na := 0
		for i := range int(o.n) {
			if f := o.fp(i); !s.holds(f) {
				add[na] = f
				na++
			}
		}
		if int(s.n)+na <= sparseMax {
			for _, f := range add[:na] {
				binary.LittleEndian.PutUint32(s.b[4*int(s.n):], f)
				s.n++
			}
			return
		}
	}
	var a, b [DistinctRegisters]uint8
	s.registers(&a)
	o.registers(&b)
	maxRegisters(&a, &b)
	s.b, s.n = a, dense
}

// Covers reports whether every value of o is in s (for registers: whether
// no register of o is above s's): when it is, s.Union(o) changes nothing.
func (s *Sketch) Covers(o *Sketch) bool {
	if o.n == 0 {
		return true
	}
	if s.n != dense && o.n != dense {
		for i := range int(o.n) {
			if !s.holds(o.fp(i)) {
				return false
			}
		}
		return true
	}
	var a, b [DistinctRegisters]uint8
	s.registers(&a)
	o.registers(&b)
	for i := range a {
		if b[i] > a[i] {
			return false
		}
	}
	return true
}

// The binary form of a Sketch (AppendBinary): 'S' and six bytes per value
// (its fingerprint, little-endian, then its register and rank, so that a
// merge elsewhere can build registers without computing them), or 'D' and
// the DistinctRegisters registers. An empty sketch is 'S' alone.
const (
	sketchSparse = 'S'
	sketchDense  = 'D'
	// SketchEntryBytes is the size of one value of an exact sketch in its
	// binary form, and SketchMaxExact the most values it holds exactly.
	SketchEntryBytes = 6
	SketchMaxExact   = sparseMax
)

// AppendBinary appends s's binary form to b.
func (s *Sketch) AppendBinary(b []byte) ([]byte, error) {
	if s.n == dense {
		b = append(b, sketchDense)
		return append(b, s.b[:]...), nil
	}
	b = append(b, sketchSparse)
	for i := range int(s.n) {
		f := s.fp(i)
		idx, rank := place(f)
		b = binary.LittleEndian.AppendUint32(b, f)
		b = append(b, uint8(idx), rank)
	}
	return b, nil
}

// UnmarshalBinary sets s from its binary form; "" is an empty sketch.
func (s *Sketch) UnmarshalBinary(b []byte) error {
	*s = Sketch{}
	if len(b) == 0 {
		return nil
	}
	switch b[0] {
	case sketchDense:
		if len(b) != 1+DistinctRegisters {
			return fmt.Errorf("counting: sketch: %d bytes of registers, want %d", len(b)-1, DistinctRegisters)
		}
		for i, r := range b[1:] {
			if r > maxRank {
				return fmt.Errorf("counting: sketch: register %d rank %d over %d", i, r, maxRank)
			}
		}
		copy(s.b[:], b[1:])
		s.n = dense
	case sketchSparse:
		n := (len(b) - 1) / SketchEntryBytes
		if (len(b)-1)%SketchEntryBytes != 0 || n > sparseMax {
			return fmt.Errorf("counting: sketch: %d bytes of values: want at most %d values of %d bytes", len(b)-1, sparseMax, SketchEntryBytes)
		}
		for i := range n {
			f := binary.LittleEndian.Uint32(b[1+SketchEntryBytes*i:])
			if s.holds(f) {
				return fmt.Errorf("counting: sketch: value %d repeated", i)
			}
			binary.LittleEndian.PutUint32(s.b[4*i:], f)
			s.n++
		}
	default:
		return fmt.Errorf("counting: sketch: unknown form %q; expect 'S' or 'D'", b[0])
	}
	return nil
}

// DistinctTables returns the distinct-value tables of w's windows, in
// order, or nil when w counts events: what a fleet-wide tier wraps.
func (w *Windows) DistinctTables() []*Distinct { return w.distinct }

// Better reports whether result r of a window with limit lim replaces
// best, of a window with limit bestLim, as the result of several windows
// (Windows.AddDistinct): an exceeded result beats one that is not, the
// first exceeded window is kept, and otherwise the higher share of its
// limit wins.
func Better(r, best Result, lim, bestLim float64) bool { return better(r, best, lim, bestLim) }

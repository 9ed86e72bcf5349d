package decap

import "net/netip"

// maxDatagram is the largest reassembled payload: the IPv4 total length and
// the IPv6 payload length (no jumbo fragments) are 16 bits.
const maxDatagram = 65535

// fragKey names a datagram under reassembly (RFC 791 and RFC 8200: source,
// destination, identification, and the protocol for IPv4).
type fragKey struct {
	src, dst netip.Addr
	id       uint32
	proto    uint8
	v6       bool
}

// datagram is one datagram under reassembly. Fragment offsets count 8-byte
// blocks, so a bitmap of blocks records what arrived; the first copy of a
// block wins, as most stacks do, and later overlapping bytes are dropped.
type datagram struct {
	key   fragKey
	buf   []byte // maxDatagram bytes once in use
	have  [(maxDatagram+7)/8/64 + 1]uint64
	total int // payload length, known once the last fragment arrived; else -1
	high  int // the highest end of any fragment so far
	proto uint8
	first bool // the offset-0 fragment arrived (proto is known)
	age   uint64
}

// defragmenter holds a bounded number of datagrams. It never looks at a
// clock: when full, the datagram that started longest ago is dropped.
type defragmenter struct {
	max       int
	table     map[fragKey]*datagram
	free      []*datagram
	done      *datagram // the last completed datagram; its buffer is handed out
	doneProto uint8
	clock     uint64
	evicted   uint64
}

func newDefragmenter(max int) *defragmenter {
	if max <= 0 {
		max = 128
	}
	return &defragmenter{max: max, table: make(map[fragKey]*datagram)}
}

// add stores one fragment. It returns the whole payload once every block has
// arrived (valid until the next add), nil while some are missing, or a
// reason when the fragment is impossible.
func (f *defragmenter) add(key fragKey, off int, more bool, data []byte, proto uint8) ([]byte, string) {
	// The buffer handed out last time may be reused from now on.
	if f.done != nil {
		f.free = append(f.free, f.done)
		f.done = nil
	}
	end := off + len(data)
	switch {
	case end > maxDatagram:
		return nil, "fragment ends beyond 65535 bytes"
	case more && len(data)%8 != 0:
		return nil, "non-final fragment length not a multiple of 8"
	case len(data) == 0 && more:
		return nil, "empty fragment"
	}
	g := f.table[key]
	if g == nil {
		g = f.get(key)
	}
	if !more {
		if g.total >= 0 && g.total != end {
			return nil, "two final fragments disagree on length"
		}
		if g.high > end {
			return nil, "final fragment ends before data already held"
		}
		g.total = end
	}
	if g.total >= 0 && end > g.total {
		return nil, "fragment beyond the final fragment"
	}
	if off == 0 {
		g.first, g.proto = true, proto
	}
	g.high = max(g.high, end)
	for blk := off / 8; blk*8 < end; blk++ {
		if g.have[blk/64]&(1<<(blk%64)) != 0 {
			continue
		}
		g.have[blk/64] |= 1 << (blk % 64)
		lo, hi := blk*8, min(blk*8+8, end)
		copy(g.buf[lo:hi], data[lo-off:hi-off])
	}
	if g.total < 0 || !g.first {
		return nil, ""
	}
	for blk := 0; blk*8 < g.total; blk++ {
		if g.have[blk/64]&(1<<(blk%64)) == 0 {
			return nil, ""
		}
	}
	delete(f.table, key)
	f.done, f.doneProto = g, g.proto
	return g.buf[:g.total], ""
}

// get starts a datagram, evicting the oldest when the table is full.
func (f *defragmenter) get(key fragKey) *datagram {
	if len(f.table) >= f.max {
		var oldest *datagram
		for _, g := range f.table {
			if oldest == nil || g.age < oldest.age {
				oldest = g
			}
		}
		delete(f.table, oldest.key)
		f.free = append(f.free, oldest)
		f.evicted++
	}
	var g *datagram
	if n := len(f.free); n > 0 {
		g, f.free = f.free[n-1], f.free[:n-1]
		buf := g.buf
		*g = datagram{buf: buf}
	} else {
		g = &datagram{buf: make([]byte, maxDatagram)}
	}
	f.clock++
	g.key, g.total, g.age = key, -1, f.clock
	f.table[key] = g
	return g
}

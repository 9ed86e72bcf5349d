package sniff

import (
	"bytes"
	"net/netip"

	"github.com/guardd/guardd/characteristics/ja4h"
	"github.com/guardd/guardd/characteristics/tlsfp"
	"github.com/guardd/guardd/ingest/quic"
)

// flowKey names a flow whatever the direction: a is the lower endpoint.
// Addresses are stored as 16 bytes (IPv4-mapped for IPv4, and v4 set) so the
// key holds no pointer: it hashes fast and the GC does not scan it.
type flowKey struct {
	a, b   [16]byte
	ap, bp uint16
	proto  uint8
	v4     bool
}

// makeKey returns the key of a packet's flow and the side that sent it: 0 when
// the source is the key's a endpoint, 1 when it is b.
func makeKey(src netip.Addr, sport uint16, dst netip.Addr, dport uint16, proto uint8) (flowKey, int) {
	s, d := src.As16(), dst.As16()
	v4 := src.Is4()
	c := src.Compare(dst) // as bytes.Compare(s[:], d[:]) within a family, in two words
	if c < 0 || (c == 0 && sport <= dport) {
		return flowKey{a: s, b: d, ap: sport, bp: dport, proto: proto, v4: v4}, 0
	}
	return flowKey{a: d, b: s, ap: dport, bp: sport, proto: proto, v4: v4}, 1
}

func (k *flowKey) addr(a [16]byte) netip.Addr {
	if k.v4 {
		return netip.AddrFrom4([4]byte(a[12:]))
	}
	return netip.AddrFrom16(a)
}

// endpoints returns the sender and receiver of side.
func (k *flowKey) endpoints(side int) (netip.Addr, uint16, netip.Addr, uint16) {
	if side == 0 {
		return k.addr(k.a), k.ap, k.addr(k.b), k.bp
	}
	return k.addr(k.b), k.bp, k.addr(k.a), k.ap
}

// flow is the state of one TCP connection or QUIC flow. It stays small: a
// half-open connection costs only this struct and its map entry; buffers hang
// off dir and quic only once data arrives, and are dropped once the client's
// messages are done.
type flow struct {
	key        flowKey
	self       int32
	prev, next int32 // recency list, head = most recent
	last       int64 // packet time of the last packet, unix ns
	isn        [2]uint32
	syn        [2]bool
	closed     bool // FIN or RST seen: a new SYN starts a new flow
	done       bool // nothing more to learn from this flow
	client     int8 // side that sent the hello or request, -1 while unknown
	dir        [2]*tcpDir
	quic       [2]*quic.Flow
}

// finish drops the buffers of a flow that has nothing more to give.
func (f *flow) finish(p *pools) {
	f.done = true
	p.putDir(f.dir[0])
	p.putDir(f.dir[1])
	f.dir = [2]*tcpDir{}
	f.quic = [2]*quic.Flow{}
}

func (f *flow) clear(p *pools) {
	f.finish(p)
	f.isn, f.syn = [2]uint32{}, [2]bool{}
	f.closed, f.done, f.client = false, false, -1
}

// maxPooled bounds each free list of pools.
const maxPooled = 256

// pools keeps the per-direction state of finished flows for reuse (with the
// buffers a Scanner or Parser grew), so a busy link allocates little per
// connection.
type pools struct {
	dirs     []*tcpDir
	scanners []*tlsfp.Scanner
	parsers  []*ja4h.Parser
}

func (p *pools) dir() *tcpDir {
	if n := len(p.dirs); n > 0 {
		d := p.dirs[n-1]
		p.dirs = p.dirs[:n-1]
		return d
	}
	return &tcpDir{}
}

func (p *pools) putDir(d *tcpDir) {
	if d == nil {
		return
	}
	p.putStream(&d.st)
	*d = tcpDir{}
	if len(p.dirs) < maxPooled {
		p.dirs = append(p.dirs, d)
	}
}

func (p *pools) scanner() *tlsfp.Scanner {
	if n := len(p.scanners); n > 0 {
		sc := p.scanners[n-1]
		p.scanners = p.scanners[:n-1]
		return sc
	}
	return new(tlsfp.Scanner)
}

func (p *pools) parser() *ja4h.Parser {
	if n := len(p.parsers); n > 0 {
		hp := p.parsers[n-1]
		p.parsers = p.parsers[:n-1]
		return hp
	}
	return new(ja4h.Parser)
}

// putStream returns st's Scanner and Parser and drops its buffered bytes.
func (p *pools) putStream(st *stream) {
	if st.tls != nil && len(p.scanners) < maxPooled {
		st.tls.Reset()
		p.scanners = append(p.scanners, st.tls)
	}
	if st.http != nil && len(p.parsers) < maxPooled {
		st.http.Reset()
		p.parsers = append(p.parsers, st.http)
	}
	st.tls, st.http, st.pre = nil, nil, nil
}

const chunkBits = 8 // flows are allocated in chunks of 256, so pointers stay valid

// flowTable is a bounded map of flows with a recency list. Flows live in
// chunked slabs addressed by index, which keeps per-flow cost low and the
// pointer count small under a flood of distinct flows.
type flowTable struct {
	pools      *pools
	m          map[flowKey]int32
	chunks     [][]flow
	free       []int32
	head, tail int32
	max        int
	evicted    uint64
	created    uint64
}

func (t *flowTable) init(max int, p *pools) {
	*t = flowTable{pools: p, m: make(map[flowKey]int32, min(max, 1024)), head: -1, tail: -1, max: max,
		evicted: t.evicted, created: t.created}
}

func (t *flowTable) len() int { return len(t.m) }

func (t *flowTable) at(i int32) *flow {
	return &t.chunks[i>>chunkBits][i&(1<<chunkBits-1)]
}

func (t *flowTable) lookup(k flowKey) *flow {
	i, ok := t.m[k]
	if !ok {
		return nil
	}
	return t.at(i)
}

// insert adds a flow for k, evicting the least recently active flow when the
// table is full.
func (t *flowTable) insert(k flowKey) *flow {
	if len(t.m) >= t.max && t.tail >= 0 {
		t.remove(t.tail)
		t.evicted++
	}
	var i int32
	if n := len(t.free); n > 0 {
		i = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		n := int32(len(t.chunks)) << chunkBits
		t.chunks = append(t.chunks, make([]flow, 1<<chunkBits))
		for j := n + 1<<chunkBits - 1; j > n; j-- {
			t.free = append(t.free, j)
		}
		i = n
	}
	f := t.at(i)
	*f = flow{key: k, self: i, prev: -1, next: -1, client: -1}
	t.m[k] = i
	t.pushFront(f)
	t.created++
	return f
}

// reset starts a new connection on f's key.
func (t *flowTable) reset(f *flow) {
	f.clear(t.pools)
	t.created++
}

// touch marks f as the most recently active flow.
func (t *flowTable) touch(f *flow) {
	if t.head == f.self {
		return
	}
	t.unlink(f)
	t.pushFront(f)
}

// expire removes the flows whose last packet is before deadline and returns
// how many.
func (t *flowTable) expire(deadline int64) int {
	n := 0
	for t.tail >= 0 && t.at(t.tail).last < deadline {
		t.remove(t.tail)
		n++
	}
	return n
}

func (t *flowTable) remove(i int32) {
	f := t.at(i)
	t.unlink(f)
	delete(t.m, f.key)
	f.finish(t.pools)
	*f = flow{}
	t.free = append(t.free, i)
}

func (t *flowTable) pushFront(f *flow) {
	f.prev, f.next = -1, t.head
	if t.head >= 0 {
		t.at(t.head).prev = f.self
	}
	t.head = f.self
	if t.tail < 0 {
		t.tail = f.self
	}
}

func (t *flowTable) unlink(f *flow) {
	if f.prev >= 0 {
		t.at(f.prev).next = f.next
	} else if t.head == f.self {
		t.head = f.next
	}
	if f.next >= 0 {
		t.at(f.next).prev = f.prev
	} else if t.tail == f.self {
		t.tail = f.prev
	}
	f.prev, f.next = -1, -1
}

// tcpDir reassembles the first bytes of one direction of a TCP connection.
type tcpDir struct {
	base     uint32 // sequence number of stream offset 0
	next     uint32 // sequence number of the next byte to deliver
	anchored bool   // base comes from the SYN
	ooo      []oooSeg
	st       stream
}

type oooSeg struct {
	seq  uint32
	data []byte
}

func (d *tcpDir) addOOO(seq uint32, data []byte) {
	d.ooo = append(d.ooo, oooSeg{seq: seq, data: bytes.Clone(data)})
}

// nextOOO returns the first-arrived buffered segment that covers d.next, so the
// first copy of overlapping bytes wins, or -1.
func (d *tcpDir) nextOOO() int {
	for i, g := range d.ooo {
		if !seqLT(d.next, g.seq) && seqLT(d.next, g.seq+uint32(len(g.data))) {
			return i
		}
	}
	return -1
}

// dropStaleOOO drops buffered segments wholly before d.next.
func (d *tcpDir) dropStaleOOO() {
	k := d.ooo[:0]
	for _, g := range d.ooo {
		if seqLT(d.next, g.seq+uint32(len(g.data))) {
			k = append(k, g)
		}
	}
	clear(d.ooo[len(k):])
	d.ooo = k
	if len(d.ooo) == 0 {
		d.ooo = nil
	}
}

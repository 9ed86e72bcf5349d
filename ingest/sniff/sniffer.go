package sniff

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/guardd/guardd/characteristics/ja4h"
	"github.com/guardd/guardd/characteristics/tlsfp"
	"github.com/guardd/guardd/ingest/capture"
	"github.com/guardd/guardd/ingest/decap"
	"github.com/guardd/guardd/ingest/quic"
)

// Defaults of Config.
const (
	DefaultMaxFlows    = 1 << 20
	DefaultFlowBytes   = 64 << 10
	DefaultIdleTimeout = 60 * time.Second
)

const (
	maxOOOSegments = 16       // out-of-order segments buffered per direction
	scanWindow     = 4 << 10  // bytes of an unclassified stream kept for the fallback scan
	maxFlowBytes   = 16 << 20 // upper bound accepted for Config.FlowBytes
	sweepEvery     = time.Second
)

// Config tunes a Sniffer. The zero value is the default.
type Config struct {
	// MaxFlows caps the flow table (TCP connections and QUIC flows). When it
	// is full the least recently active flow is evicted. Default 1<<20.
	MaxFlows int
	// FlowBytes is the budget of client bytes reassembled per TCP flow: the
	// hellos and request headers of a connection live in its first bytes.
	// Default 64 KiB.
	FlowBytes int
	// IdleTimeout expires a flow with no packet for that long, measured in
	// packet time. Default 60s.
	IdleTimeout time.Duration
	// DisableJA4H leaves ja4h and ja4h_r empty on http records. JA4H is under
	// the FoxIO License 1.1 (non-commercial); see characteristics/ja4h.
	DisableJA4H bool
	// LegacyALPN computes JA4's ALPN characters with the pre-August-2024 rule
	// (--ja4-alpn=legacy).
	LegacyALPN bool
	// Decap configures the decapsulation of each frame. The Sniffer always
	// turns Defragment on: QUIC Initials over a small MTU arrive as IP
	// fragments.
	Decap decap.Config
}

func (c Config) withDefaults() Config {
	if c.MaxFlows == 0 {
		c.MaxFlows = DefaultMaxFlows
	}
	if c.FlowBytes == 0 {
		c.FlowBytes = DefaultFlowBytes
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	c.Decap.Defragment = true
	return c
}

// Validate reports a config field out of range.
func (c Config) Validate() error {
	switch {
	case c.MaxFlows < 0:
		return fmt.Errorf("sniff: config: max_flows %d: must be positive", c.MaxFlows)
	case c.FlowBytes < 0 || c.FlowBytes > maxFlowBytes:
		return fmt.Errorf("sniff: config: flow_bytes %d: must be between 1 and %d", c.FlowBytes, maxFlowBytes)
	case c.IdleTimeout < 0:
		return fmt.Errorf("sniff: config: idle_timeout %v: must be positive", c.IdleTimeout)
	}
	return nil
}

// Stats counts what a Sniffer saw. Its fields only grow, except FlowsActive.
type Stats struct {
	Packets      uint64 // packets handed to HandlePacket
	NotTransport uint64 // frames without an IP TCP/UDP packet (ARP, ICMP ...)
	Malformed    uint64 // frames that failed to decode
	// MalformedBy splits Malformed by outcome (truncated, malformed) and
	// the layer that failed ("ipv4", "tcp", "gre" ...): closed sets.
	MalformedBy map[MalformedReason]uint64

	FlowsActive  int    // flows in the table now
	FlowsCreated uint64 // flows ever created
	FlowsEvicted uint64 // flows evicted because the table was full
	FlowsExpired uint64 // flows expired after IdleTimeout

	OutOfOrder    uint64 // TCP segments buffered ahead of a gap
	OOODropped    uint64 // out-of-order segments dropped (buffer full or past the budget)
	Retransmitted uint64 // TCP segments whose bytes had all been seen
	OverBudget    uint64 // flows that reached FlowBytes
	BadHellos     uint64 // ClientHellos that failed to parse

	TLS, QUIC, HTTP uint64 // records emitted

	Truncated bool // ReadFile: the file ended inside a packet
}

// MalformedReason says why and where a frame failed to decode.
type MalformedReason struct {
	Outcome string // decap.Outcome: "truncated" or "malformed"
	Layer   string
}

// Sniffer turns packets into Records. It is not safe for concurrent use: run
// one per capture (or per fanout member) and merge their records.
type Sniffer struct {
	cfg  Config
	opts tlsfp.Options
	emit func(*Record)
	dec  *decap.Decoder
	pkt  decap.Packet
	ft   flowTable
	pool pools

	stats       Stats
	malformed   map[MalformedReason]uint64
	lastSweepNS int64 // packet time of the last Flush, unix ns
	swept       bool  // lastSweepNS is set

	// current packet, for the records it completes
	frame int
	now   time.Time
	nowNS int64

	rec Record
	ch  tlsfp.ClientHello

	// out takes every record in capture order. A hello's Fingerprint is
	// still to be computed from ch (transport 't' or 'q'); ch is nil for an
	// HTTP record, and both are valid only during the call. By default it
	// computes and emits; ReadFile hands hellos to other goroutines.
	out func(r *Record, ch *tlsfp.ClientHello, transport byte)
}

// New returns a Sniffer that calls emit for every record, in capture order.
// It starts nothing.
func New(cfg Config, emit func(*Record)) (*Sniffer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if emit == nil {
		return nil, errors.New("sniff: nil emit func")
	}
	cfg = cfg.withDefaults()
	s := &Sniffer{
		cfg:       cfg,
		opts:      tlsfp.Options{LegacyALPN: cfg.LegacyALPN},
		emit:      emit,
		dec:       decap.NewDecoder(cfg.Decap),
		malformed: map[MalformedReason]uint64{},
	}
	s.out = s.computeAndEmit
	s.ft.init(cfg.MaxFlows, &s.pool)
	return s, nil
}

func (s *Sniffer) computeAndEmit(r *Record, ch *tlsfp.ClientHello, transport byte) {
	if ch != nil {
		r.Fingerprint = tlsfp.Compute(ch, transport, s.opts)
	}
	s.emit(r)
}

const (
	tcpFIN = decap.TCPFin
	tcpSYN = decap.TCPSyn
	tcpRST = decap.TCPRst
)

// HandlePacket decodes one captured frame, tracks its flow and emits the
// records it completes. p.Data is not retained.
func (s *Sniffer) HandlePacket(p *capture.Packet) {
	s.stats.Packets++
	s.frame = p.Frame
	// A record without a time (a pcapng SPB at the start of a file) keeps
	// the previous packet's: flow ages stay monotonic and in range.
	if !p.Time.IsZero() {
		ns := p.Time.UnixNano()
		s.now, s.nowNS = p.Time, ns
		switch {
		case !s.swept:
			s.swept, s.lastSweepNS = true, ns
		case ns-s.lastSweepNS >= int64(sweepEvery) || ns < s.lastSweepNS:
			s.lastSweepNS = ns
			s.Flush(p.Time)
		}
	}
	dp := &s.pkt
	if err := s.dec.Decode(p.Data, p.LinkType, dp); err != nil {
		if errors.Is(err, decap.ErrNotTransport) {
			s.stats.NotTransport++
			return
		}
		s.stats.Malformed++
		r := MalformedReason{Outcome: decap.OutcomeOf(err).String(), Layer: "other"}
		var de *decap.DecodeError
		if errors.As(err, &de) {
			r.Layer = de.Layer
		}
		s.malformed[r]++
		return
	}
	switch dp.Proto {
	case 6:
		s.handleTCP(dp)
	case 17:
		s.handleUDP(dp)
	}
}

// Flush expires the flows idle for IdleTimeout at now. Live captures call it
// on a timer so flows expire while traffic still arrives; HandlePacket also
// calls it as packet time advances.
func (s *Sniffer) Flush(now time.Time) {
	deadline := now.Add(-s.cfg.IdleTimeout).UnixNano()
	s.stats.FlowsExpired += uint64(s.ft.expire(deadline))
}

// Close ends the capture: every flow is dropped. An incomplete message gives
// no record.
func (s *Sniffer) Close() {
	s.ft.init(s.cfg.MaxFlows, &s.pool)
}

// Stats returns a snapshot of the counters.
func (s *Sniffer) Stats() Stats {
	st := s.stats
	st.FlowsActive = s.ft.len()
	st.FlowsEvicted = s.ft.evicted
	st.FlowsCreated = s.ft.created
	st.MalformedBy = make(map[MalformedReason]uint64, len(s.malformed))
	for k, v := range s.malformed {
		st.MalformedBy[k] = v
	}
	return st
}

func (s *Sniffer) handleTCP(dp *decap.Packet) {
	key, side := makeKey(dp.Src, dp.SrcPort, dp.Dst, dp.DstPort, 6)
	syn := dp.TCPFlags&tcpSYN != 0
	f := s.ft.lookup(key)
	if f == nil {
		if !syn && len(dp.Payload) == 0 {
			return // a pure ACK, FIN or RST of a flow we never saw: no state
		}
		f = s.ft.insert(key)
	} else if syn && (f.closed || (f.syn[side] && f.isn[side] != dp.Seq)) {
		// A new connection on a 4-tuple we saw end (or a new ISN).
		s.ft.reset(f)
	}
	f.last = s.nowNS
	s.ft.touch(f)
	if syn && !f.syn[side] {
		f.syn[side] = true
		f.isn[side] = dp.Seq
	}
	if len(dp.Payload) > 0 && !f.done && (f.client < 0 || int(f.client) == side) {
		s.tcpData(f, side, dp)
	}
	if dp.TCPFlags&(tcpFIN|tcpRST) != 0 {
		f.closed = true
		if dp.TCPFlags&tcpRST != 0 {
			f.finish(&s.pool)
		}
	}
	if f.done && (f.dir[0] != nil || f.dir[1] != nil) {
		f.finish(&s.pool) // hand the buffers back as soon as the client is done
	}
}

func (s *Sniffer) tcpData(f *flow, side int, dp *decap.Packet) {
	d := f.dir[side]
	if d == nil {
		d = s.pool.dir()
		f.dir[side] = d
		seq := dp.Seq
		if dp.TCPFlags&tcpSYN != 0 {
			seq++
		}
		if f.syn[side] {
			d.base, d.anchored = f.isn[side]+1, true
		} else {
			d.base = seq
		}
		d.next = d.base
	} else if d.st.state == stDone {
		return // this direction is neither hello nor request: do not buffer it
	}
	seq := dp.Seq
	if dp.TCPFlags&tcpSYN != 0 {
		seq++ // data in the SYN (TCP Fast Open) starts after it
	}
	s.reassemble(f, side, d, seq, dp.Payload)
}

// reassemble delivers the in-order bytes of one direction to its stream,
// buffering a bounded number of segments that arrive ahead of a gap.
func (s *Sniffer) reassemble(f *flow, side int, d *tcpDir, seq uint32, data []byte) {
	budget := uint32(s.cfg.FlowBytes)
	if seqLT(seq, d.base) {
		// Before the start: a capture without the SYN whose first segment
		// came out of order. Rebase while nothing has been decided.
		back := d.base - seq
		if d.anchored || d.st.state != stClassify || len(d.st.pre) != int(d.next-d.base) || back > budget {
			s.stats.Retransmitted++
			return
		}
		if len(d.st.pre) > 0 {
			d.addOOO(d.base, d.st.pre)
		}
		d.st = stream{}
		d.base, d.next = seq, seq
	}
	end := seq + uint32(len(data))
	if !seqLT(d.next, end) {
		s.stats.Retransmitted++
		return
	}
	if seqLT(d.next, seq) {
		if seq-d.base >= budget || len(d.ooo) >= maxOOOSegments {
			s.stats.OOODropped++
			return
		}
		if lim := d.base + budget; seqLT(lim, end) {
			data = data[:lim-seq]
		}
		s.stats.OutOfOrder++
		d.addOOO(seq, data)
		return
	}
	s.deliver(f, side, d, data[d.next-seq:])
	for len(d.ooo) > 0 && !f.done && f.dir[side] == d {
		i := d.nextOOO()
		if i < 0 {
			break
		}
		g := d.ooo[i]
		d.ooo = append(d.ooo[:i], d.ooo[i+1:]...)
		if gend := g.seq + uint32(len(g.data)); seqLT(d.next, gend) {
			s.deliver(f, side, d, g.data[d.next-g.seq:])
		}
	}
	d.dropStaleOOO()
}

// deliver hands in-order bytes to the stream, within the flow's budget.
func (s *Sniffer) deliver(f *flow, side int, d *tcpDir, b []byte) {
	room := s.cfg.FlowBytes - int(d.next-d.base)
	over := len(b) >= room
	if over {
		b = b[:room]
	}
	d.next += uint32(len(b))
	s.feed(f, side, &d.st, b)
	if over && f.dir[side] == d && d.st.state != stDone {
		s.stats.OverBudget++
		s.streamDone(f, side, &d.st)
	}
}

func (s *Sniffer) handleUDP(dp *decap.Packet) {
	pl := dp.Payload
	if len(pl) == 0 {
		return
	}
	if quic.LooksLikeInitial(pl) {
		key, side := makeKey(dp.Src, dp.SrcPort, dp.Dst, dp.DstPort, 17)
		f := s.ft.lookup(key)
		if f == nil {
			f = s.ft.insert(key)
		}
		f.last = s.nowNS
		s.ft.touch(f)
		if f.done {
			return
		}
		q := f.quic[side]
		if q == nil {
			q = new(quic.Flow)
			f.quic[side] = q
		}
		hello, ok := q.Handle(pl)
		if ok {
			f.client = int8(side)
			s.hello(dp.Src, dp.SrcPort, dp.Dst, dp.DstPort, hello, nil, 'q', ProtoQUIC, 1)
			f.finish(&s.pool)
		} else if q.Done() {
			f.quic[side] = nil
			if f.quic[1-side] == nil {
				f.finish(&s.pool)
			}
		}
		return
	}
	// SSDP and friends: a datagram holding one HTTP/1.x request.
	if isHTTP, _ := ja4h.Classify(pl); isHTTP {
		var p ja4h.Parser
		p.Feed(pl, func(r *ja4h.Request) {
			s.request(dp.Src, dp.SrcPort, dp.Dst, dp.DstPort, r)
		})
	}
}

// hello fingerprints one ClientHello, parsing b unless ch holds it already,
// and emits its record.
func (s *Sniffer) hello(src netip.Addr, sport uint16, dst netip.Addr, dport uint16, b []byte, ch *tlsfp.ClientHello, transport byte, proto string, index int) bool {
	if ch == nil {
		ch = &s.ch
		if err := tlsfp.ParseHello(b, ch); err != nil {
			s.stats.BadHellos++
			return false
		}
	}
	r := &s.rec
	*r = Record{
		Proto: proto, Frame: s.frame, Time: s.now,
		Src: src, SrcPort: sport, Dst: dst, DstPort: dport,
		HelloIndex: index,
	}
	if proto == ProtoQUIC {
		s.stats.QUIC++
	} else {
		s.stats.TLS++
	}
	s.out(r, ch, transport)
	return true
}

// request emits the record of one HTTP/1.x request.
func (s *Sniffer) request(src netip.Addr, sport uint16, dst netip.Addr, dport uint16, req *ja4h.Request) {
	r := &s.rec
	*r = Record{
		Proto: ProtoHTTP, Frame: s.frame, Time: s.now,
		Src: src, SrcPort: sport, Dst: dst, DstPort: dport,
		Method: string(req.Method), Path: string(req.Target),
	}
	if !s.cfg.DisableJA4H {
		r.JA4H, r.JA4HR = ja4h.Fingerprint(req)
	}
	s.stats.HTTP++
	s.out(r, nil, 0)
}

// seqLT reports a < b in TCP sequence space.
func seqLT(a, b uint32) bool { return int32(a-b) < 0 }

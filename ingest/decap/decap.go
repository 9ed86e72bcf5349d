package decap

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"strconv"

	"github.com/gopacket/gopacket/layers"
)

// MaxDepth caps the number of headers peeled from one frame (VLAN tags, MPLS
// labels, IP headers, tunnels, IPv6 extension headers each count as one), so
// a frame of nested tunnels costs bounded work.
const MaxDepth = 32

// Bits of Packet.Encap: what was peeled on the way to the transport header.
const (
	EncapVLAN        uint16 = 1 << iota // 802.1Q tag (0x8100)
	EncapQinQ                           // service tag (0x88a8 or 0x9100)
	EncapMPLS                           // MPLS label stack
	EncapGRE                            // GRE header
	EncapERSPAN1                        // ERSPAN type I (GRE 0x88be without sequence)
	EncapERSPAN2                        // ERSPAN type II (GRE 0x88be with sequence)
	EncapERSPAN3                        // ERSPAN type III (GRE 0x22eb)
	EncapVXLAN                          // VXLAN, or VXLAN-GPE
	EncapGENEVE                         // GENEVE
	EncapIPinIP                         // an IP header carried directly in IP (protocol 4 or 41)
	EncapIPv4Options                    // an IPv4 header with options
	EncapIPv6Ext                        // IPv6 extension headers skipped
	EncapDefrag                         // reassembled from IP fragments
	EncapPPPoE                          // PPPoE session (0x8864)
)

// Packet is the innermost IP and transport header of a frame.
type Packet struct {
	Src, Dst         netip.Addr // innermost IP header
	Proto            uint8      // 6 TCP, 17 UDP
	SrcPort, DstPort uint16
	TCPFlags         uint8 // TCP only: CWR ECE URG ACK PSH RST SYN FIN
	Seq, Ack         uint32
	Window           uint16
	// Payload is the transport payload. It aliases the frame, or the
	// decoder's reassembly buffer when EncapDefrag is set; either way it is
	// valid until the next Decode call.
	Payload []byte
	Encap   uint16 // Encap* bits
}

// TCP flag bits of Packet.TCPFlags.
const (
	TCPFin uint8 = 1 << iota
	TCPSyn
	TCPRst
	TCPPsh
	TCPAck
	TCPUrg
	TCPEce
	TCPCwr
)

// Outcome classifies a Decode call, for metrics. The set is closed.
type Outcome uint8

// Outcomes of Decode.
const (
	OutcomeOK              Outcome = iota // a TCP or UDP packet
	OutcomeNotIP                          // ARP, LLDP, 802.3 ...: ErrNotIP
	OutcomeTruncated                      // cut short by snaplen or damage: *DecodeError
	OutcomeMalformed                      // impossible lengths or versions: *DecodeError
	OutcomeFragmentPending                // fragment held until its datagram is whole: ErrFragmentPending
	OutcomeUnsupported                    // other transports, link types, tunnels; fragments with reassembly off
	NumOutcomes
)

var outcomeNames = [NumOutcomes]string{"ok", "not_ip", "truncated", "malformed", "fragment_pending", "unsupported"}

// String returns the metric label value of o.
func (o Outcome) String() string {
	if o < NumOutcomes {
		return outcomeNames[o]
	}
	return "other"
}

// ErrNotTransport is wrapped by every error saying the frame, well formed or
// not yet complete, carries no TCP or UDP header to hand on. Callers skip such
// frames without counting them as malformed.
var ErrNotTransport = errors.New("decap: no tcp or udp packet")

// skipError is a preallocated sentinel wrapping ErrNotTransport.
type skipError struct {
	msg     string
	outcome Outcome
}

func (e *skipError) Error() string { return e.msg }
func (e *skipError) Unwrap() error { return ErrNotTransport }

// Errors for frames without a TCP or UDP packet; all wrap ErrNotTransport.
var (
	ErrNotIP           error = &skipError{"decap: not an ip packet", OutcomeNotIP}
	ErrUnsupported     error = &skipError{"decap: unsupported protocol", OutcomeUnsupported}
	ErrFragment        error = &skipError{"decap: ip fragment and reassembly is off", OutcomeUnsupported}
	ErrFragmentPending error = &skipError{"decap: ip fragment held for reassembly", OutcomeFragmentPending}
)

// DecodeError reports a truncated or malformed frame. The Decoder reuses one
// value: it is valid until the next Decode call.
type DecodeError struct {
	Outcome Outcome // OutcomeTruncated or OutcomeMalformed
	Layer   string  // "ipv4", "tcp", "gre" ...
	Offset  int     // where that layer starts, in the frame (or reassembled datagram)
	Reason  string
}

func (e *DecodeError) Error() string {
	return "decap: " + e.Layer + " at offset " + strconv.Itoa(e.Offset) + ": " + e.Reason
}

// OutcomeOf classifies an error returned by Decode.
func OutcomeOf(err error) Outcome {
	switch e := err.(type) {
	case nil:
		return OutcomeOK
	case *skipError:
		return e.outcome
	case *DecodeError:
		return e.Outcome
	}
	return OutcomeMalformed
}

// Config sets up a Decoder. The zero value is usable.
type Config struct {
	// Defragment reassembles IPv4 and IPv6 fragments. Off, fragments give
	// ErrFragment.
	Defragment bool
	// MaxFragmentDatagrams caps datagrams under reassembly (each holds up to
	// 64 KiB); the oldest is dropped when a new one would exceed it.
	// 0 means 128.
	MaxFragmentDatagrams int
	// VXLANPorts are the UDP ports, matched on either side, carrying VXLAN.
	// Port 4790 is VXLAN-GPE. Nil means 4789, 8472 and 4790.
	VXLANPorts []uint16
	// GenevePort is the UDP port, matched on either side, carrying GENEVE.
	// 0 means 6081.
	GenevePort uint16
}

// Stats counts Decode calls by outcome.
type Stats struct {
	Packets [NumOutcomes]uint64
	// FragmentsEvicted counts datagrams dropped unfinished to make room.
	FragmentsEvicted uint64
}

// Decoder decodes frames. It is not safe for concurrent use.
type Decoder struct {
	vxlanPorts []uint16
	geneve     uint16
	defrag     *defragmenter
	stats      Stats
	err        DecodeError
	base       []byte // what DecodeError offsets count from
}

// NewDecoder returns a Decoder for cfg.
func NewDecoder(cfg Config) *Decoder {
	d := &Decoder{vxlanPorts: cfg.VXLANPorts, geneve: cfg.GenevePort}
	if d.vxlanPorts == nil {
		d.vxlanPorts = []uint16{4789, 8472, 4790}
	}
	if d.geneve == 0 {
		d.geneve = 6081
	}
	if cfg.Defragment {
		d.defrag = newDefragmenter(cfg.MaxFragmentDatagrams)
	}
	return d
}

// Stats returns the counts so far.
func (d *Decoder) Stats() Stats {
	s := d.stats
	if d.defrag != nil {
		s.FragmentsEvicted = d.defrag.evicted
	}
	return s
}

// Link-layer types without a gopacket name.
const (
	linkTypeRaw12 layers.LinkType = 12 // DLT_RAW on most BSDs' files
	linkTypeRaw14 layers.LinkType = 14 // DLT_RAW on BSD/OS
)

// SupportsLinkType reports whether Decode understands lt.
func SupportsLinkType(lt layers.LinkType) bool {
	switch lt {
	case layers.LinkTypeEthernet, layers.LinkTypeLinuxSLL, layers.LinkTypeLinuxSLL2,
		layers.LinkTypeNull, layers.LinkTypeLoop, layers.LinkTypeRaw, linkTypeRaw12, linkTypeRaw14,
		layers.LinkTypeIPv4, layers.LinkTypeIPv6:
		return true
	}
	return false
}

// next is what the decode loop expects at the start of the remaining bytes.
type next uint8

const (
	nEthernet  next = iota
	nEtherType      // dispatch on etype; bytes start after the type field
	nIPAny          // IPv4 or IPv6 by version nibble
	nIPv4
	nIPv6
	nProto // dispatch on proto; bytes start after the IP header
	nGRE
	nMPLS
	nTCP
	nUDP
)

// Decode fills p from the frame data of link type lt. It returns nil for a
// TCP or UDP packet, an error wrapping ErrNotTransport for a frame without
// one, or a *DecodeError. It never panics.
func (d *Decoder) Decode(data []byte, lt layers.LinkType, p *Packet) error {
	*p = Packet{}
	d.base = data
	err := d.decode(data, lt, p)
	d.stats.Packets[OutcomeOf(err)]++
	if err != nil {
		p.Payload = nil
	}
	return err
}

func (d *Decoder) fail(o Outcome, layer string, b []byte, reason string) error {
	// b is a subslice of base: both run to the end of the same array, so
	// the difference of capacities is where b starts.
	off := cap(d.base) - cap(b)
	if off < 0 || off > len(d.base) {
		off = len(d.base)
	}
	d.err = DecodeError{Outcome: o, Layer: layer, Offset: off, Reason: reason}
	return &d.err
}

func (d *Decoder) short(layer string, b []byte) error {
	return d.fail(OutcomeTruncated, layer, b, "truncated")
}

func be16(b []byte) uint16 { return binary.BigEndian.Uint16(b) }
func be32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }

func (d *Decoder) decode(b []byte, lt layers.LinkType, p *Packet) error {
	var (
		n     next
		etype uint16
		proto uint8
	)
	switch lt {
	case layers.LinkTypeEthernet:
		n = nEthernet
	case layers.LinkTypeLinuxSLL:
		if len(b) < 16 {
			return d.short("sll", b)
		}
		etype, b, n = be16(b[14:]), b[16:], nEtherType
	case layers.LinkTypeLinuxSLL2:
		if len(b) < 20 {
			return d.short("sll2", b)
		}
		etype, b, n = be16(b), b[20:], nEtherType
	case layers.LinkTypeNull, layers.LinkTypeLoop:
		if len(b) < 4 {
			return d.short("null", b)
		}
		fam := binary.BigEndian.Uint32(b)
		if lt == layers.LinkTypeNull && fam > 0xffff {
			// Host byte order of the capturing machine: a little-endian
			// host wrote the family in the low bytes.
			fam = binary.LittleEndian.Uint32(b)
		}
		b = b[4:]
		switch fam {
		case 2:
			n = nIPv4
		case 24, 28, 30:
			n = nIPv6
		default:
			return ErrNotIP
		}
	case layers.LinkTypeRaw, linkTypeRaw12, linkTypeRaw14:
		n = nIPAny
	case layers.LinkTypeIPv4:
		n = nIPv4
	case layers.LinkTypeIPv6:
		n = nIPv6
	default:
		return ErrUnsupported
	}

	for depth := 0; ; depth++ {
		if depth == MaxDepth {
			return d.fail(OutcomeMalformed, "decap", b, "more nested headers than MaxDepth")
		}
		switch n {
		case nEthernet:
			if len(b) < 14 {
				return d.short("ethernet", b)
			}
			etype, b, n = be16(b[12:]), b[14:], nEtherType

		case nEtherType:
			switch etype {
			case 0x0800:
				n = nIPv4
			case 0x86dd:
				n = nIPv6
			case 0x8100, 0x88a8, 0x9100:
				if len(b) < 4 {
					return d.short("vlan", b)
				}
				if etype == 0x8100 {
					p.Encap |= EncapVLAN
				} else {
					p.Encap |= EncapQinQ
				}
				etype, b = be16(b[2:]), b[4:]
			case 0x8847, 0x8848:
				n = nMPLS
			case 0x8864: // PPPoE session: ver/type, code, session, length, PPP protocol
				if len(b) < 8 {
					return d.short("pppoe", b)
				}
				p.Encap |= EncapPPPoE
				switch pp := be16(b[6:]); pp {
				case 0x0021:
					n = nIPv4
				case 0x0057:
					n = nIPv6
				default:
					return ErrNotIP // LCP, IPCP ...
				}
				b = b[8:]
			case 0x6558:
				n = nEthernet
			default:
				return ErrNotIP
			}

		case nIPAny:
			if len(b) == 0 {
				return d.short("ip", b)
			}
			switch b[0] >> 4 {
			case 4:
				n = nIPv4
			case 6:
				n = nIPv6
			default:
				return ErrNotIP
			}

		case nIPv4:
			var err error
			if b, proto, err = d.ipv4(b, p); err != nil {
				return err
			}
			n = nProto

		case nIPv6:
			var err error
			if b, proto, err = d.ipv6(b, p, &depth); err != nil {
				return err
			}
			n = nProto

		case nProto:
			switch proto {
			case 6:
				n = nTCP
			case 17:
				n = nUDP
			case 4:
				n = nIPv4
				p.Encap |= EncapIPinIP
			case 41:
				n = nIPv6
				p.Encap |= EncapIPinIP
			case 47:
				n = nGRE
			case 137: // MPLS in IP
				n = nMPLS
			default:
				return ErrUnsupported
			}

		case nGRE:
			if len(b) < 4 {
				return d.short("gre", b)
			}
			flags := b[0]
			if b[1]&7 != 0 || flags&0x40 != 0 {
				return ErrUnsupported // version 1 (PPTP) or source routing
			}
			hl := 4
			if flags&0x80 != 0 { // checksum present
				hl += 4
			}
			if flags&0x20 != 0 { // key present
				hl += 4
			}
			if flags&0x10 != 0 { // sequence present
				hl += 4
			}
			if len(b) < hl {
				return d.short("gre", b)
			}
			p.Encap |= EncapGRE
			gp := be16(b[2:])
			b = b[hl:]
			switch gp {
			case 0x88be:
				if flags&0x10 == 0 {
					p.Encap |= EncapERSPAN1
				} else {
					if len(b) < 8 {
						return d.short("erspan2", b)
					}
					p.Encap |= EncapERSPAN2
					b = b[8:]
				}
				n = nEthernet
			case 0x22eb:
				if len(b) < 12 {
					return d.short("erspan3", b)
				}
				hl := 12
				if b[11]&1 != 0 { // O bit: platform-specific subheader
					hl += 8
				}
				if len(b) < hl {
					return d.short("erspan3", b)
				}
				p.Encap |= EncapERSPAN3
				b, n = b[hl:], nEthernet
			default:
				etype, n = gp, nEtherType
			}

		case nMPLS:
			for {
				if len(b) < 4 {
					return d.short("mpls", b)
				}
				bottom := b[2]&1 != 0
				b = b[4:]
				if bottom {
					break
				}
				if depth++; depth == MaxDepth {
					return d.fail(OutcomeMalformed, "mpls", b, "label stack too deep")
				}
			}
			p.Encap |= EncapMPLS
			if len(b) == 0 {
				return d.short("mpls", b)
			}
			switch b[0] >> 4 {
			case 4:
				n = nIPv4
			case 6:
				n = nIPv6
			case 0: // pseudowire control word, then Ethernet
				if len(b) < 4 {
					return d.short("mpls", b)
				}
				b, n = b[4:], nEthernet
			default:
				return ErrUnsupported
			}

		case nTCP:
			if len(b) < 20 {
				return d.short("tcp", b)
			}
			off := int(b[12]>>4) * 4
			if off < 20 {
				return d.fail(OutcomeMalformed, "tcp", b, "data offset below 5")
			}
			if len(b) < off {
				return d.short("tcp", b)
			}
			p.Proto = 6
			p.SrcPort, p.DstPort = be16(b), be16(b[2:])
			p.Seq, p.Ack = be32(b[4:]), be32(b[8:])
			p.TCPFlags = b[13]
			p.Window = be16(b[14:])
			p.Payload = b[off:]
			return nil

		case nUDP:
			if len(b) < 8 {
				return d.short("udp", b)
			}
			payload := b[8:]
			switch ul := int(be16(b[4:])); {
			case ul == 0: // jumbogram or GSO: the IP length bounds it
			case ul < 8:
				return d.fail(OutcomeMalformed, "udp", b, "length below 8")
			case ul-8 > len(payload):
				return d.short("udp", b)
			default:
				payload = payload[:ul-8]
			}
			p.Proto = 17
			p.SrcPort, p.DstPort = be16(b), be16(b[2:])
			p.Payload = payload
			if rest, nn, et, ok := d.udpTunnel(p.SrcPort, p.DstPort, payload, p); ok {
				*p = Packet{Encap: p.Encap}
				b, n, etype = rest, nn, et
				continue
			}
			return nil
		}
	}
}

// udpTunnel recognises VXLAN and GENEVE on either port. A header that fails
// validation leaves the datagram as plain UDP.
func (d *Decoder) udpTunnel(sp, dp uint16, b []byte, p *Packet) (rest []byte, n next, etype uint16, ok bool) {
	if sp == d.geneve || dp == d.geneve {
		if len(b) < 8 || b[0]>>6 != 0 {
			return nil, 0, 0, false
		}
		hl := 8 + int(b[0]&0x3f)*4
		if len(b) < hl {
			return nil, 0, 0, false
		}
		p.Encap |= EncapGENEVE
		gp := be16(b[2:])
		if gp == 0x6558 {
			return b[hl:], nEthernet, 0, true
		}
		return b[hl:], nEtherType, gp, true
	}
	for _, port := range d.vxlanPorts {
		if sp != port && dp != port {
			continue
		}
		if len(b) < 8 {
			return nil, 0, 0, false
		}
		flags := b[0]
		if port == 4790 && flags&0x04 != 0 { // VXLAN-GPE with a next protocol
			if flags&0xc0 != 0 {
				return nil, 0, 0, false
			}
			p.Encap |= EncapVXLAN
			switch b[3] {
			case 1:
				return b[8:], nIPv4, 0, true
			case 2:
				return b[8:], nIPv6, 0, true
			case 3:
				return b[8:], nEthernet, 0, true
			case 5:
				return b[8:], nMPLS, 0, true
			}
			return nil, 0, 0, false
		}
		// RFC 7348: I flag set; reserved bits zero except the GBP G bit.
		if flags&0x08 == 0 || flags&0x77 != 0 || b[7] != 0 {
			return nil, 0, 0, false
		}
		p.Encap |= EncapVXLAN
		return b[8:], nEthernet, 0, true
	}
	return nil, 0, 0, false
}

func (d *Decoder) ipv4(b []byte, p *Packet) ([]byte, uint8, error) {
	if len(b) < 20 {
		return nil, 0, d.short("ipv4", b)
	}
	if b[0]>>4 != 4 {
		return nil, 0, d.fail(OutcomeMalformed, "ipv4", b, "version is not 4")
	}
	ihl := int(b[0]&0xf) * 4
	if ihl < 20 {
		return nil, 0, d.fail(OutcomeMalformed, "ipv4", b, "header length below 20")
	}
	if len(b) < ihl {
		return nil, 0, d.short("ipv4", b)
	}
	total := int(be16(b[2:]))
	switch {
	case total == 0: // TSO/GSO: the captured length is the length
		total = len(b)
	case total < ihl:
		return nil, 0, d.fail(OutcomeMalformed, "ipv4", b, "total length below header length")
	case total > len(b):
		return nil, 0, d.short("ipv4", b)
	}
	if ihl > 20 {
		p.Encap |= EncapIPv4Options
	}
	p.Src = netip.AddrFrom4([4]byte(b[12:16]))
	p.Dst = netip.AddrFrom4([4]byte(b[16:20]))
	proto := b[9]
	payload := b[ihl:total]
	frag := be16(b[6:])
	if frag&0x3fff == 0 { // neither MF nor an offset
		return payload, proto, nil
	}
	if d.defrag == nil {
		return nil, 0, ErrFragment
	}
	key := fragKey{src: p.Src, dst: p.Dst, id: uint32(be16(b[4:])), proto: proto}
	whole, reason := d.defrag.add(key, int(frag&0x1fff)*8, frag&0x2000 != 0, payload, proto)
	if reason != "" {
		return nil, 0, d.fail(OutcomeMalformed, "ipv4", b, reason)
	}
	if whole == nil {
		return nil, 0, ErrFragmentPending
	}
	p.Encap |= EncapDefrag
	d.base = whole
	return whole, proto, nil
}

func (d *Decoder) ipv6(b []byte, p *Packet, depth *int) ([]byte, uint8, error) {
	if len(b) < 40 {
		return nil, 0, d.short("ipv6", b)
	}
	if b[0]>>4 != 6 {
		return nil, 0, d.fail(OutcomeMalformed, "ipv6", b, "version is not 6")
	}
	rest := b[40:]
	switch pl := int(be16(b[4:])); {
	case pl == 0: // jumbogram or BIG TCP: the captured length is the length
	case pl > len(rest):
		return nil, 0, d.short("ipv6", b)
	default:
		rest = rest[:pl]
	}
	p.Src = netip.AddrFrom16([16]byte(b[8:24]))
	p.Dst = netip.AddrFrom16([16]byte(b[24:40]))
	nh := b[6]
	for {
		var hl int
		switch nh {
		case 0, 43, 60, 135, 139, 140: // hop-by-hop, routing, destination, mobility, HIP, shim6
			if len(rest) < 8 {
				return nil, 0, d.short("ipv6ext", rest)
			}
			hl = (int(rest[1]) + 1) * 8
		case 51: // AH
			if len(rest) < 8 {
				return nil, 0, d.short("ipv6ext", rest)
			}
			hl = (int(rest[1]) + 2) * 4
		case 44: // fragment
			if len(rest) < 8 {
				return nil, 0, d.short("ipv6frag", rest)
			}
			fo := be16(rest[2:])
			more := fo&1 != 0
			off := int(fo>>3) * 8
			id := be32(rest[4:])
			fnh := rest[0]
			rest = rest[8:]
			p.Encap |= EncapIPv6Ext
			if off == 0 && !more { // atomic fragment
				nh = fnh
				break
			}
			if d.defrag == nil {
				return nil, 0, ErrFragment
			}
			key := fragKey{src: p.Src, dst: p.Dst, id: id, v6: true}
			whole, reason := d.defrag.add(key, off, more, rest, fnh)
			if reason != "" {
				return nil, 0, d.fail(OutcomeMalformed, "ipv6frag", rest, reason)
			}
			if whole == nil {
				return nil, 0, ErrFragmentPending
			}
			p.Encap |= EncapDefrag
			d.base = whole
			rest, nh = whole, d.defrag.doneProto
		default:
			return rest, nh, nil
		}
		if hl > 0 {
			if len(rest) < hl {
				return nil, 0, d.short("ipv6ext", rest)
			}
			nh, rest = rest[0], rest[hl:]
			p.Encap |= EncapIPv6Ext
		}
		if *depth++; *depth >= MaxDepth {
			return nil, 0, d.fail(OutcomeMalformed, "ipv6ext", rest, "too many extension headers")
		}
	}
}

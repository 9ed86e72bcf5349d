package decap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"reflect"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// raw is a header gopacket cannot serialize (SLL, SLL2, DLT_NULL, ERSPAN I
// and III): its bytes are prepended as they are.
type raw []byte

func (r raw) LayerType() gopacket.LayerType { return gopacket.LayerTypePayload }
func (r raw) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	out, err := b.PrependBytes(len(r))
	if err != nil {
		return err
	}
	copy(out, r)
	return nil
}

func serialize(t testing.TB, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true}, ls...); err != nil {
		t.Fatalf("serialize: %v", err)
	}
	return bytes.Clone(buf.Bytes())
}

var (
	macA = net.HardwareAddr{2, 0, 0, 0, 0, 1}
	macB = net.HardwareAddr{2, 0, 0, 0, 0, 2}
	// The innermost packet every case decodes to.
	cli4, srv4 = netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("198.51.100.20")
	cli6, srv6 = netip.MustParseAddr("2001:db8::10"), netip.MustParseAddr("2001:db8::20")
	// Tunnel endpoints.
	outerA, outerB = netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	payload        = []byte("\x16\x03\x01\x00\x05hello")
)

func eth(et layers.EthernetType) *layers.Ethernet {
	return &layers.Ethernet{SrcMAC: macA, DstMAC: macB, EthernetType: et}
}

func ip4(src, dst netip.Addr, proto layers.IPProtocol) *layers.IPv4 {
	return &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: proto, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
}

func ip6(src, dst netip.Addr, nh layers.IPProtocol) *layers.IPv6 {
	return &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: nh, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
}

func tcp() *layers.TCP {
	return &layers.TCP{SrcPort: 40000, DstPort: 443, Seq: 1000, Ack: 2000, PSH: true, ACK: true, Window: 512, DataOffset: 5}
}

func udp(sp, dp uint16) *layers.UDP {
	return &layers.UDP{SrcPort: layers.UDPPort(sp), DstPort: layers.UDPPort(dp)}
}

// inner4 is IPv4/TCP with the payload; inner6 is IPv6/UDP.
func inner4() []gopacket.SerializableLayer {
	return []gopacket.SerializableLayer{ip4(cli4, srv4, layers.IPProtocolTCP), tcp(), gopacket.Payload(payload)}
}

func inner6() []gopacket.SerializableLayer {
	return []gopacket.SerializableLayer{ip6(cli6, srv6, layers.IPProtocolUDP), udp(50000, 443), gopacket.Payload(payload)}
}

func cat(groups ...[]gopacket.SerializableLayer) []gopacket.SerializableLayer {
	var out []gopacket.SerializableLayer
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

func l(ls ...gopacket.SerializableLayer) []gopacket.SerializableLayer { return ls }

// outer4 is an Ethernet/IPv4 underlay carrying proto.
func outer4(proto layers.IPProtocol) []gopacket.SerializableLayer {
	return l(eth(layers.EthernetTypeIPv4), ip4(outerA, outerB, proto))
}

func sll(etype uint16) raw {
	h := make([]byte, 16)
	binary.BigEndian.PutUint16(h[0:], 0) // to us
	binary.BigEndian.PutUint16(h[2:], 1) // ARPHRD_ETHER
	binary.BigEndian.PutUint16(h[4:], 6)
	copy(h[6:], macA)
	binary.BigEndian.PutUint16(h[14:], etype)
	return h
}

func sll2(etype uint16) raw {
	h := make([]byte, 20)
	binary.BigEndian.PutUint16(h[0:], etype)
	binary.BigEndian.PutUint32(h[4:], 3) // ifindex
	binary.BigEndian.PutUint16(h[8:], 1)
	h[10], h[11] = 4, 6 // outgoing, halen
	copy(h[12:], macA)
	return h
}

func family(order binary.ByteOrder, fam uint32) raw {
	h := make([]byte, 4)
	order.PutUint32(h, fam)
	return h
}

func erspan3(withO bool) raw {
	h := make([]byte, 12, 20)
	h[0] = 0x20 // version 2 (type III)
	if withO {
		h[11] |= 1
		h = h[:20]
	}
	return h
}

type decodeCase struct {
	name   string
	lt     layers.LinkType
	layers []gopacket.SerializableLayer
	frame  []byte // instead of layers
	cfg    Config
	encap  uint16
	want6  bool // innermost is inner6 (UDP) rather than inner4 (TCP)
}

func decodeCases() []decodeCase {
	vlan := func(et layers.EthernetType) *layers.Dot1Q { return &layers.Dot1Q{VLANIdentifier: 100, Type: et} }
	greTo := func(p layers.EthernetType) *layers.GRE { return &layers.GRE{Protocol: p} }
	vxlanL := &layers.VXLAN{ValidIDFlag: true, VNI: 42}
	loEth := &layers.Ethernet{SrcMAC: make(net.HardwareAddr, 6), DstMAC: make(net.HardwareAddr, 6), EthernetType: layers.EthernetTypeIPv4}
	return []decodeCase{
		{name: "ethernet ipv4 tcp", lt: layers.LinkTypeEthernet, layers: cat(l(eth(layers.EthernetTypeIPv4)), inner4())},
		{name: "ethernet ipv6 udp", lt: layers.LinkTypeEthernet, layers: cat(l(eth(layers.EthernetTypeIPv6)), inner6()), want6: true},
		{name: "linux lo zero macs", lt: layers.LinkTypeEthernet, layers: cat(l(loEth), inner4())},
		{name: "sll", lt: layers.LinkTypeLinuxSLL, layers: cat(l(sll(0x0800)), inner4())},
		{name: "sll ipv6", lt: layers.LinkTypeLinuxSLL, layers: cat(l(sll(0x86dd)), inner6()), want6: true},
		{name: "sll2", lt: layers.LinkTypeLinuxSLL2, layers: cat(l(sll2(0x0800)), inner4())},
		{name: "sll2 ipv6", lt: layers.LinkTypeLinuxSLL2, layers: cat(l(sll2(0x86dd)), inner6()), want6: true},
		{name: "null little endian", lt: layers.LinkTypeNull, layers: cat(l(family(binary.LittleEndian, 2)), inner4())},
		{name: "null big endian", lt: layers.LinkTypeNull, layers: cat(l(family(binary.BigEndian, 2)), inner4())},
		{name: "null ipv6 24", lt: layers.LinkTypeNull, layers: cat(l(family(binary.LittleEndian, 24)), inner6()), want6: true},
		{name: "null ipv6 28", lt: layers.LinkTypeNull, layers: cat(l(family(binary.BigEndian, 28)), inner6()), want6: true},
		{name: "null ipv6 30", lt: layers.LinkTypeNull, layers: cat(l(family(binary.LittleEndian, 30)), inner6()), want6: true},
		{name: "loop", lt: layers.LinkTypeLoop, layers: cat(l(family(binary.BigEndian, 2)), inner4())},
		{name: "raw 101 v4", lt: layers.LinkTypeRaw, layers: inner4()},
		{name: "raw 101 v6", lt: layers.LinkTypeRaw, layers: inner6(), want6: true},
		{name: "raw 12", lt: 12, layers: inner4()},
		{name: "raw 14", lt: 14, layers: inner6(), want6: true},
		{name: "ipv4 228", lt: layers.LinkTypeIPv4, layers: inner4()},
		{name: "ipv6 229", lt: layers.LinkTypeIPv6, layers: inner6(), want6: true},
		{name: "802.1q", lt: layers.LinkTypeEthernet, layers: cat(l(eth(layers.EthernetTypeDot1Q), vlan(layers.EthernetTypeIPv4)), inner4()), encap: EncapVLAN},
		{name: "qinq 88a8", lt: layers.LinkTypeEthernet, layers: cat(l(eth(layers.EthernetTypeQinQ), vlan(layers.EthernetTypeDot1Q), vlan(layers.EthernetTypeIPv4)), inner4()), encap: EncapVLAN | EncapQinQ},
		{name: "qinq 9100", lt: layers.LinkTypeEthernet, layers: cat(l(eth(0x9100), vlan(layers.EthernetTypeDot1Q), vlan(layers.EthernetTypeIPv6)), inner6()), encap: EncapVLAN | EncapQinQ, want6: true},
		{name: "mpls two labels", lt: layers.LinkTypeEthernet, layers: cat(l(eth(layers.EthernetTypeMPLSUnicast), &layers.MPLS{Label: 16, TTL: 64}, &layers.MPLS{Label: 17, StackBottom: true, TTL: 64}), inner4()), encap: EncapMPLS},
		{name: "mpls ipv6", lt: layers.LinkTypeEthernet, layers: cat(l(eth(layers.EthernetTypeMPLSUnicast), &layers.MPLS{Label: 17, StackBottom: true, TTL: 64}), inner6()), encap: EncapMPLS, want6: true},
		{name: "mpls pseudowire ethernet", lt: layers.LinkTypeEthernet, layers: cat(l(eth(layers.EthernetTypeMPLSUnicast), &layers.MPLS{Label: 17, StackBottom: true, TTL: 64}, raw{0, 0, 0, 0}, eth(layers.EthernetTypeIPv4)), inner4()), encap: EncapMPLS},
		{name: "ipv4 options", lt: layers.LinkTypeRaw, layers: l(&layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: cli4.AsSlice(), DstIP: srv4.AsSlice(),
			Options: []layers.IPv4Option{{OptionType: 7, OptionLength: 7, OptionData: []byte{4, 0, 0, 0, 0}}, {OptionType: 0}}}, tcp(), gopacket.Payload(payload)), encap: EncapIPv4Options},
		{name: "ipv6 extension headers", lt: layers.LinkTypeRaw, layers: l(ip6(cli6, srv6, layers.IPProtocolIPv6HopByHop), raw{60, 0, 1, 4, 0, 0, 0, 0}, raw{43, 0, 1, 4, 0, 0, 0, 0},
			raw{17, 0, 0, 0, 0, 0, 0, 0}, udp(50000, 443), gopacket.Payload(payload)), want6: true, encap: EncapIPv6Ext},
		{name: "ipv6 atomic fragment", lt: layers.LinkTypeRaw, layers: l(ip6(cli6, srv6, layers.IPProtocolIPv6Fragment), raw{17, 0, 0, 0, 0, 0, 0, 9}, udp(50000, 443), gopacket.Payload(payload)), want6: true, encap: EncapIPv6Ext},
		{name: "pppoe ipv4", lt: layers.LinkTypeEthernet, layers: cat(l(eth(layers.EthernetTypePPPoESession), &layers.PPPoE{Version: 1, Type: 1, SessionId: 9}, &layers.PPP{PPPType: layers.PPPTypeIPv4}), inner4()), encap: EncapPPPoE},
		{name: "vlan pppoe ipv6", lt: layers.LinkTypeEthernet, layers: cat(l(eth(layers.EthernetTypeDot1Q), vlan(layers.EthernetTypePPPoESession), &layers.PPPoE{Version: 1, Type: 1, SessionId: 9}, &layers.PPP{PPPType: layers.PPPTypeIPv6}), inner6()), encap: EncapVLAN | EncapPPPoE, want6: true},
		{name: "vxlan over ipv6", lt: layers.LinkTypeEthernet, layers: cat(l(eth(layers.EthernetTypeIPv6), ip6(srv6, cli6, layers.IPProtocolUDP), udp(51000, 4789), vxlanL, eth(layers.EthernetTypeIPv4)), inner4()), encap: EncapVXLAN},
		{name: "gre over ipv6", lt: layers.LinkTypeEthernet, layers: cat(l(eth(layers.EthernetTypeIPv6), ip6(srv6, cli6, layers.IPProtocolGRE), greTo(layers.EthernetTypeIPv6)), inner6()), encap: EncapGRE, want6: true},
		{name: "ipip", lt: layers.LinkTypeEthernet, layers: cat(outer4(layers.IPProtocolIPv4), inner4()), encap: EncapIPinIP},
		{name: "ipv6 in ipv4", lt: layers.LinkTypeEthernet, layers: cat(outer4(layers.IPProtocolIPv6), inner6()), encap: EncapIPinIP, want6: true},
		{name: "ipv4 in ipv6", lt: layers.LinkTypeEthernet, layers: cat(l(eth(layers.EthernetTypeIPv6), ip6(cli6, srv6, layers.IPProtocolIPv4)), inner4()), encap: EncapIPinIP},
		{name: "gre ipv4", lt: layers.LinkTypeEthernet, layers: cat(outer4(layers.IPProtocolGRE), l(greTo(layers.EthernetTypeIPv4)), inner4()), encap: EncapGRE},
		{name: "gre key seq checksum ipv6", lt: layers.LinkTypeEthernet, layers: cat(outer4(layers.IPProtocolGRE),
			l(&layers.GRE{ChecksumPresent: true, KeyPresent: true, SeqPresent: true, Key: 7, Seq: 9, Protocol: layers.EthernetTypeIPv6}), inner6()), encap: EncapGRE, want6: true},
		{name: "gre key only", lt: layers.LinkTypeEthernet, layers: cat(outer4(layers.IPProtocolGRE), l(&layers.GRE{KeyPresent: true, Key: 7, Protocol: layers.EthernetTypeIPv4}), inner4()), encap: EncapGRE},
		{name: "gretap", lt: layers.LinkTypeEthernet, layers: cat(outer4(layers.IPProtocolGRE), l(greTo(layers.EthernetTypeTransparentEthernetBridging), eth(layers.EthernetTypeIPv4)), inner4()), encap: EncapGRE},
		{name: "gre mpls", lt: layers.LinkTypeEthernet, layers: cat(outer4(layers.IPProtocolGRE), l(greTo(layers.EthernetTypeMPLSUnicast), &layers.MPLS{Label: 5, StackBottom: true}), inner4()), encap: EncapGRE | EncapMPLS},
		{name: "erspan type i", lt: layers.LinkTypeEthernet, layers: cat(outer4(layers.IPProtocolGRE), l(greTo(layers.EthernetTypeERSPAN), eth(layers.EthernetTypeIPv4)), inner4()), encap: EncapGRE | EncapERSPAN1},
		{name: "erspan type ii", lt: layers.LinkTypeEthernet, layers: cat(outer4(layers.IPProtocolGRE), l(&layers.GRE{SeqPresent: true, Seq: 1, Protocol: layers.EthernetTypeERSPAN},
			&layers.ERSPANII{Version: 1, SessionID: 3}, eth(layers.EthernetTypeIPv4)), inner4()), encap: EncapGRE | EncapERSPAN2},
		{name: "erspan type iii", lt: layers.LinkTypeEthernet, layers: cat(outer4(layers.IPProtocolGRE), l(&layers.GRE{SeqPresent: true, Protocol: 0x22eb}, erspan3(false), eth(layers.EthernetTypeIPv4)), inner4()), encap: EncapGRE | EncapERSPAN3},
		{name: "erspan type iii with subheader", lt: layers.LinkTypeEthernet, layers: cat(outer4(layers.IPProtocolGRE), l(&layers.GRE{SeqPresent: true, Protocol: 0x22eb}, erspan3(true), eth(layers.EthernetTypeIPv6)), inner6()), encap: EncapGRE | EncapERSPAN3, want6: true},
		{name: "vxlan dst 4789", lt: layers.LinkTypeEthernet, layers: cat(outer4(layers.IPProtocolUDP), l(udp(51000, 4789), vxlanL, eth(layers.EthernetTypeIPv4)), inner4()), encap: EncapVXLAN},
		{name: "vxlan src 4789", lt: layers.LinkTypeEthernet, layers: cat(outer4(layers.IPProtocolUDP), l(udp(4789, 51000), vxlanL, eth(layers.EthernetTypeIPv4)), inner4()), encap: EncapVXLAN},
		{name: "vxlan 8472", lt: layers.LinkTypeEthernet, layers: cat(outer4(layers.IPProtocolUDP), l(udp(51000, 8472), vxlanL, eth(layers.EthernetTypeIPv6)), inner6()), encap: EncapVXLAN, want6: true},
		{name: "vxlan gpe p clear", lt: layers.LinkTypeEthernet, layers: cat(outer4(layers.IPProtocolUDP), l(udp(51000, 4790), raw{0x08, 0, 0, 0, 0, 0, 42, 0}, eth(layers.EthernetTypeIPv4)), inner4()), encap: EncapVXLAN},
		{name: "vxlan gpe next ipv4", lt: layers.LinkTypeEthernet, layers: cat(outer4(layers.IPProtocolUDP), l(udp(51000, 4790), raw{0x0c, 0, 0, 1, 0, 0, 42, 0}), inner4()), encap: EncapVXLAN},
		{name: "vxlan custom port", lt: layers.LinkTypeEthernet, cfg: Config{VXLANPorts: []uint16{9999}}, layers: cat(outer4(layers.IPProtocolUDP), l(udp(51000, 9999), vxlanL, eth(layers.EthernetTypeIPv4)), inner4()), encap: EncapVXLAN},
		{name: "geneve", lt: layers.LinkTypeEthernet, layers: cat(outer4(layers.IPProtocolUDP), l(udp(51000, 6081), &layers.Geneve{Protocol: layers.EthernetTypeTransparentEthernetBridging, VNI: 5}, eth(layers.EthernetTypeIPv4)), inner4()), encap: EncapGENEVE},
		{name: "geneve options ipv6", lt: layers.LinkTypeEthernet, layers: cat(outer4(layers.IPProtocolUDP), l(udp(6081, 51000), raw{0x02, 0, 0x86, 0xdd, 0, 0, 5, 0, 1, 2, 3, 1, 9, 9, 9, 9}), inner6()), encap: EncapGENEVE, want6: true},
		{name: "gre erspan ethernet vxlan tcp", lt: layers.LinkTypeEthernet, layers: cat(outer4(layers.IPProtocolGRE),
			l(&layers.GRE{SeqPresent: true, Protocol: layers.EthernetTypeERSPAN}, &layers.ERSPANII{Version: 1}, eth(layers.EthernetTypeDot1Q), vlan(layers.EthernetTypeIPv4), ip4(outerB, outerA, layers.IPProtocolUDP), udp(33000, 4789), vxlanL, eth(layers.EthernetTypeIPv4)), inner4()),
			encap: EncapGRE | EncapERSPAN2 | EncapVLAN | EncapVXLAN},
		{name: "sll2 qinq mpls gre erspan3 geneve ipip", lt: layers.LinkTypeLinuxSLL2, layers: cat(l(sll2(0x88a8), vlan(layers.EthernetTypeMPLSUnicast), &layers.MPLS{Label: 3, StackBottom: true},
			ip4(outerA, outerB, layers.IPProtocolGRE), &layers.GRE{Protocol: 0x22eb}, erspan3(true), eth(layers.EthernetTypeIPv6), ip6(cli6, srv6, layers.IPProtocolUDP), udp(6081, 6081),
			&layers.Geneve{Protocol: layers.EthernetTypeTransparentEthernetBridging}, eth(layers.EthernetTypeIPv4), ip4(outerA, outerB, layers.IPProtocolIPv4)), inner4()),
			encap: EncapQinQ | EncapMPLS | EncapGRE | EncapERSPAN3 | EncapGENEVE | EncapIPinIP},
	}
}

func (c decodeCase) build(t testing.TB) []byte {
	if c.frame != nil {
		return c.frame
	}
	return serialize(t, c.layers...)
}

func TestDecode(t *testing.T) {
	for _, c := range decodeCases() {
		t.Run(c.name, func(t *testing.T) {
			frame := c.build(t)
			d := NewDecoder(c.cfg)
			var p Packet
			if err := d.Decode(frame, c.lt, &p); err != nil {
				t.Fatalf("Decode: %v\n%x", err, frame)
			}
			want := Packet{Src: cli4, Dst: srv4, Proto: 6, SrcPort: 40000, DstPort: 443, TCPFlags: TCPPsh | TCPAck, Seq: 1000, Ack: 2000, Window: 512, Encap: c.encap}
			if c.want6 {
				want = Packet{Src: cli6, Dst: srv6, Proto: 17, SrcPort: 50000, DstPort: 443, Encap: c.encap}
			}
			got := p
			got.Payload = nil
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
			if !bytes.Equal(p.Payload, payload) {
				t.Errorf("payload %q, want %q", p.Payload, payload)
			}
			if s := d.Stats(); s.Packets[OutcomeOK] != 1 {
				t.Errorf("stats %+v, want one ok", s)
			}
		})
	}
}

// TestDecodeTruncated cuts every case at every byte: each prefix must give a
// truncation error (the IP lengths say bytes are missing), never a panic.
func TestDecodeTruncated(t *testing.T) {
	for _, c := range decodeCases() {
		t.Run(c.name, func(t *testing.T) {
			frame := c.build(t)
			d := NewDecoder(c.cfg)
			var p Packet
			for i := range len(frame) {
				cut := bytes.Clone(frame[:i])
				err := d.Decode(cut, c.lt, &p)
				var de *DecodeError
				if !errors.As(err, &de) || de.Outcome != OutcomeTruncated {
					t.Fatalf("cut at %d: got %v, want a truncation error", i, err)
				}
			}
		})
	}
}

func TestDecodeNotTransport(t *testing.T) {
	arp := serialize(t, eth(layers.EthernetTypeARP), &layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4,
		HwAddressSize: 6, ProtAddressSize: 4, Operation: 1, SourceHwAddress: macA, SourceProtAddress: []byte{10, 0, 0, 1},
		DstHwAddress: make([]byte, 6), DstProtAddress: []byte{10, 0, 0, 2}})
	icmp := serialize(t, eth(layers.EthernetTypeIPv4), ip4(cli4, srv4, layers.IPProtocolICMPv4), &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(8, 0)})
	frag := serialize(t, eth(layers.EthernetTypeIPv4), &layers.IPv4{Version: 4, IHL: 5, Flags: layers.IPv4MoreFragments, Protocol: layers.IPProtocolUDP, SrcIP: cli4.AsSlice(), DstIP: srv4.AsSlice()}, gopacket.Payload(make([]byte, 16)))
	grev1 := serialize(t, outer4(layers.IPProtocolGRE)[0], ip4(outerA, outerB, layers.IPProtocolGRE), raw{0x30, 0x01, 0x88, 0x0b, 0, 0, 0, 0, 0, 0, 0, 0})
	cases := []struct {
		name    string
		lt      layers.LinkType
		frame   []byte
		err     error
		outcome Outcome
	}{
		{"arp", layers.LinkTypeEthernet, arp, ErrNotIP, OutcomeNotIP},
		{"null family 7", layers.LinkTypeNull, []byte{7, 0, 0, 0, 0x45}, ErrNotIP, OutcomeNotIP},
		{"802.3 length", layers.LinkTypeEthernet, append(bytes.Clone(arp[:12]), 0, 40, 0xaa, 0xaa, 3), ErrNotIP, OutcomeNotIP},
		{"icmp", layers.LinkTypeEthernet, icmp, ErrUnsupported, OutcomeUnsupported},
		{"fragment without reassembly", layers.LinkTypeEthernet, frag, ErrFragment, OutcomeUnsupported},
		{"gre version 1", layers.LinkTypeEthernet, grev1, ErrUnsupported, OutcomeUnsupported},
		{"unknown link type", layers.LinkTypeIEEE802_11, icmp, ErrUnsupported, OutcomeUnsupported},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := NewDecoder(Config{})
			var p Packet
			err := d.Decode(c.frame, c.lt, &p)
			if err != c.err || !errors.Is(err, ErrNotTransport) {
				t.Fatalf("got %v, want %v wrapping ErrNotTransport", err, c.err)
			}
			if got := OutcomeOf(err); got != c.outcome {
				t.Errorf("outcome %v, want %v", got, c.outcome)
			}
			if d.Stats().Packets[c.outcome] != 1 {
				t.Errorf("stats %+v", d.Stats())
			}
			if n := testing.AllocsPerRun(50, func() { _ = d.Decode(c.frame, c.lt, &p) }); n != 0 {
				t.Errorf("%v allocs per Decode, want 0", n)
			}
		})
	}
}

func TestDecodeMalformed(t *testing.T) {
	good := serialize(t, cat(l(eth(layers.EthernetTypeIPv4)), inner4())...)
	mod := func(f func(b []byte)) []byte { b := bytes.Clone(good); f(b); return b }
	cases := []struct {
		name  string
		frame []byte
		layer string
	}{
		{"ipv4 version 5", mod(func(b []byte) { b[14] = 0x55 }), "ipv4"},
		{"ipv4 ihl 4", mod(func(b []byte) { b[14] = 0x44 }), "ipv4"},
		{"ipv4 total below ihl", mod(func(b []byte) { b[16], b[17] = 0, 10 }), "ipv4"},
		{"tcp offset 4", mod(func(b []byte) { b[14+20+12] = 0x40 }), "tcp"},
		{"tcp offset 4 before ethernet padding", append(mod(func(b []byte) { b[14+20+12] = 0x40 }), 0, 0, 0, 0), "tcp"},
		{"nesting too deep", func() []byte {
			var ls []gopacket.SerializableLayer
			ls = append(ls, eth(layers.EthernetTypeIPv4))
			for range MaxDepth {
				ls = append(ls, ip4(outerA, outerB, layers.IPProtocolIPv4))
			}
			return serialize(t, cat(ls, inner4())...)
		}(), "decap"},
		{"mpls stack too deep", func() []byte {
			ls := l(eth(layers.EthernetTypeMPLSUnicast))
			for range MaxDepth + 1 {
				ls = append(ls, &layers.MPLS{Label: 9})
			}
			return serialize(t, cat(ls, l(&layers.MPLS{StackBottom: true}), inner4())...)
		}(), "mpls"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := NewDecoder(Config{})
			var p Packet
			err := d.Decode(c.frame, layers.LinkTypeEthernet, &p)
			var de *DecodeError
			if !errors.As(err, &de) || de.Outcome != OutcomeMalformed || de.Layer != c.layer {
				t.Fatalf("got %v, want a malformed %s error", err, c.layer)
			}
			if c.layer == "tcp" && de.Offset != 34 {
				t.Errorf("offset %d, want 34 (after Ethernet and IPv4)", de.Offset)
			}
			if errors.Is(err, ErrNotTransport) {
				t.Errorf("malformed error wraps ErrNotTransport")
			}
			if p.Payload != nil {
				t.Errorf("payload set on error")
			}
			if n := testing.AllocsPerRun(50, func() { _ = d.Decode(c.frame, layers.LinkTypeEthernet, &p) }); n != 0 {
				t.Errorf("%v allocs per malformed Decode, want 0", n)
			}
		})
	}
}

// TestDecodeLengths covers the lengths that mean "use the captured length"
// (TSO/GSO) and the Ethernet padding that the IP length cuts off.
func TestDecodeLengths(t *testing.T) {
	good := serialize(t, cat(l(eth(layers.EthernetTypeIPv4)), inner4())...)
	tso := bytes.Clone(good)
	tso[16], tso[17] = 0, 0
	padded := append(bytes.Clone(good), 0, 0, 0, 0)
	big := serialize(t, eth(layers.EthernetTypeIPv4), ip4(cli4, srv4, layers.IPProtocolTCP), tcp(), gopacket.Payload(make([]byte, 64000)))
	big[16], big[17] = 0, 0
	v6 := serialize(t, cat(l(eth(layers.EthernetTypeIPv6)), inner6())...)
	v6[18], v6[19] = 0, 0
	v6 = append(v6[:len(v6)-len(payload)-8], 0xc3, 0x50, 0x01, 0xbb, 0, 0, 0, 0) // UDP length 0
	v6 = append(v6, payload...)
	cases := []struct {
		name  string
		frame []byte
		n     int
	}{
		{"ipv4 total length 0", tso, len(payload)},
		{"ethernet padding", padded, len(payload)},
		{"tso 64000", big, 64000},
		{"ipv6 payload length 0 udp length 0", v6, len(payload)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p Packet
			if err := NewDecoder(Config{}).Decode(c.frame, layers.LinkTypeEthernet, &p); err != nil {
				t.Fatal(err)
			}
			if len(p.Payload) != c.n {
				t.Errorf("payload %d bytes, want %d", len(p.Payload), c.n)
			}
		})
	}
}

// TestVXLANLookalike keeps a datagram from port 4789 that is not VXLAN as
// plain UDP.
func TestVXLANLookalike(t *testing.T) {
	frame := serialize(t, eth(layers.EthernetTypeIPv4), ip4(cli4, srv4, layers.IPProtocolUDP), udp(4789, 53), gopacket.Payload("\x12\x34\x01\x00\x00\x01\x00\x00"))
	var p Packet
	if err := NewDecoder(Config{}).Decode(frame, layers.LinkTypeEthernet, &p); err != nil {
		t.Fatal(err)
	}
	if p.Encap != 0 || p.DstPort != 53 || len(p.Payload) != 8 {
		t.Errorf("got %+v", p)
	}
}

func TestDecodeAllocs(t *testing.T) {
	for _, c := range decodeCases() {
		frame := c.build(t)
		d := NewDecoder(c.cfg)
		var p Packet
		if n := testing.AllocsPerRun(100, func() { _ = d.Decode(frame, c.lt, &p) }); n != 0 {
			t.Errorf("%s: %v allocs per Decode, want 0", c.name, n)
		}
	}
	d := NewDecoder(Config{})
	var p Packet
	trunc := serialize(t, cat(l(eth(layers.EthernetTypeIPv4)), inner4())...)[:30]
	if n := testing.AllocsPerRun(100, func() { _ = d.Decode(trunc, layers.LinkTypeEthernet, &p) }); n != 0 {
		t.Errorf("truncated: %v allocs per Decode, want 0", n)
	}
}

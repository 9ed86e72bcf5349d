package decap

import (
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/guardd/guardd/cputime"
)

func benchDecode(b *testing.B, lt layers.LinkType, frame []byte) {
	d := NewDecoder(Config{Defragment: true})
	var p Packet
	if err := d.Decode(frame, lt, &p); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	cpu := cputime.Process()
	for b.Loop() {
		_ = d.Decode(frame, lt, &p)
	}
	// CPU time per call is steadier than wall time on a shared machine.
	cputime.Report(b, cpu, int64(b.N), "cpu-ns/op")
}

func BenchmarkDecode(b *testing.B) {
	body := gopacket.Payload(make([]byte, 512))
	b.Run("ethernet-ipv4-tcp", func(b *testing.B) {
		benchDecode(b, layers.LinkTypeEthernet, serialize(b, eth(layers.EthernetTypeIPv4), ip4(cli4, srv4, layers.IPProtocolTCP), tcp(), body))
	})
	b.Run("ethernet-ipv6-udp", func(b *testing.B) {
		benchDecode(b, layers.LinkTypeEthernet, serialize(b, eth(layers.EthernetTypeIPv6), ip6(cli6, srv6, layers.IPProtocolUDP), udp(50000, 443), body))
	})
	b.Run("sll2-ipv4-tcp", func(b *testing.B) {
		benchDecode(b, layers.LinkTypeLinuxSLL2, serialize(b, sll2(0x0800), ip4(cli4, srv4, layers.IPProtocolTCP), tcp(), body))
	})
	b.Run("vxlan-ipv4-tcp", func(b *testing.B) {
		benchDecode(b, layers.LinkTypeEthernet, serialize(b, eth(layers.EthernetTypeIPv4), ip4(outerA, outerB, layers.IPProtocolUDP), udp(51000, 4789),
			&layers.VXLAN{ValidIDFlag: true, VNI: 1}, eth(layers.EthernetTypeIPv4), ip4(cli4, srv4, layers.IPProtocolTCP), tcp(), body))
	})
	b.Run("gre-erspan-vlan-vxlan-tcp", func(b *testing.B) {
		var c decodeCase
		for _, c = range decodeCases() {
			if c.name == "gre erspan ethernet vxlan tcp" {
				break
			}
		}
		benchDecode(b, c.lt, c.build(b))
	})
}

// BenchmarkGopacketParser is the reference: gopacket's DecodingLayerParser
// over the same Ethernet/IPv4/TCP frame.
func BenchmarkGopacketParser(b *testing.B) {
	frame := serialize(b, eth(layers.EthernetTypeIPv4), ip4(cli4, srv4, layers.IPProtocolTCP), tcp(), gopacket.Payload(make([]byte, 512)))
	var (
		e   layers.Ethernet
		ip  layers.IPv4
		t   layers.TCP
		pl  gopacket.Payload
		got []gopacket.LayerType
	)
	parser := gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet, &e, &ip, &t, &pl)
	b.ReportAllocs()
	cpu := cputime.Process()
	for b.Loop() {
		_ = parser.DecodeLayers(frame, &got)
	}
	cputime.Report(b, cpu, int64(b.N), "cpu-ns/op")
}

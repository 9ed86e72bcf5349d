package sniff

import (
	"bytes"
	"crypto/tls"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/guardd/guardd/ingest/capture"
)

// recordingConn captures what a tls.Client writes and fails every read, so a
// handshake yields the ClientHello record and stops.
type recordingConn struct {
	net.Conn
	buf bytes.Buffer
}

func (c *recordingConn) Write(b []byte) (int, error) { return c.buf.Write(b) }
func (c *recordingConn) Read([]byte) (int, error)    { return 0, net.ErrClosed }
func (c *recordingConn) Close() error                { return nil }
func (c *recordingConn) SetDeadline(time.Time) error { return nil }
func (c *recordingConn) SetWriteDeadline(time.Time) error {
	return nil
}
func (c *recordingConn) SetReadDeadline(time.Time) error { return nil }

// clientHello returns the TLS record(s) of a crypto/tls ClientHello.
func clientHello(t testing.TB, sni string) []byte {
	t.Helper()
	c := &recordingConn{}
	tc := tls.Client(c, &tls.Config{ServerName: sni, NextProtos: []string{"h2", "http/1.1"}})
	_ = tc.Handshake()
	if c.buf.Len() < 100 || c.buf.Bytes()[0] != 0x16 {
		t.Fatalf("no ClientHello written: %x", c.buf.Bytes())
	}
	return bytes.Clone(c.buf.Bytes())
}

type endpoint struct {
	addr netip.Addr
	port uint16
}

var (
	cli = endpoint{netip.MustParseAddr("10.0.0.1"), 40000}
	srv = endpoint{netip.MustParseAddr("10.0.0.2"), 443}
	cl6 = endpoint{netip.MustParseAddr("2001:db8::1"), 40001}
	sv6 = endpoint{netip.MustParseAddr("2001:db8::2"), 8443}
)

// Flag sets of test segments.
const (
	fSYN    = "S"
	fSYNACK = "SA"
	fACK    = "A"
	fPSH    = "PA"
	fFIN    = "FA"
	fRST    = "R"
)

var serializeOpts = gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}

// tcpFrame builds an Ethernet frame holding one TCP segment.
func tcpFrame(t testing.TB, from, to endpoint, flags string, seq uint32, payload []byte) []byte {
	t.Helper()
	tcp := &layers.TCP{SrcPort: layers.TCPPort(from.port), DstPort: layers.TCPPort(to.port), Seq: seq, Window: 65535}
	for _, c := range flags {
		switch c {
		case 'S':
			tcp.SYN = true
		case 'A':
			tcp.ACK = true
		case 'P':
			tcp.PSH = true
		case 'F':
			tcp.FIN = true
		case 'R':
			tcp.RST = true
		}
	}
	return ipFrame(t, from, to, layers.IPProtocolTCP, tcp, payload)
}

// udpFrame builds an Ethernet frame holding one UDP datagram.
func udpFrame(t testing.TB, from, to endpoint, payload []byte) []byte {
	t.Helper()
	udp := &layers.UDP{SrcPort: layers.UDPPort(from.port), DstPort: layers.UDPPort(to.port)}
	return ipFrame(t, from, to, layers.IPProtocolUDP, udp, payload)
}

type checksummed interface {
	gopacket.SerializableLayer
	SetNetworkLayerForChecksum(gopacket.NetworkLayer) error
}

func ipFrame(t testing.TB, from, to endpoint, proto layers.IPProtocol, l4 checksummed, payload []byte) []byte {
	t.Helper()
	eth := &layers.Ethernet{SrcMAC: make([]byte, 6), DstMAC: make([]byte, 6)}
	var ip gopacket.SerializableLayer
	if from.addr.Is4() {
		eth.EthernetType = layers.EthernetTypeIPv4
		v4 := &layers.IPv4{Version: 4, TTL: 64, Protocol: proto, SrcIP: from.addr.AsSlice(), DstIP: to.addr.AsSlice()}
		l4.SetNetworkLayerForChecksum(v4)
		ip = v4
	} else {
		eth.EthernetType = layers.EthernetTypeIPv6
		v6 := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: proto, SrcIP: from.addr.AsSlice(), DstIP: to.addr.AsSlice()}
		l4.SetNetworkLayerForChecksum(v6)
		ip = v6
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, serializeOpts, eth, ip, l4, gopacket.Payload(payload)); err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(buf.Bytes())
}

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// run feeds frames (Ethernet) through a new Sniffer, 10ms apart, and returns
// copies of the records and the final stats.
func run(t testing.TB, cfg Config, frames [][]byte) ([]Record, Stats) {
	t.Helper()
	var out []Record
	s, err := New(cfg, func(r *Record) { out = append(out, *r) })
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		s.HandlePacket(&capture.Packet{Frame: i + 1, Time: epoch.Add(time.Duration(i) * 10 * time.Millisecond),
			CaptureLength: len(f), Length: len(f), LinkType: layers.LinkTypeEthernet, Data: f})
	}
	st := s.Stats()
	s.Close()
	return out, st
}

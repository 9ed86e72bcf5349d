//go:build ignore

// gen drives the traffic and rewrites the packets of make-captures.sh:
//
//	go run gen.go tlsclient ADDR SNI ALPN[,ALPN] [tls12]   a crypto/tls client
//	go run gen.go quicserver ADDR CERT KEY v1|v2             a quic-go server (until killed)
//	go run gen.go quicclient ADDR SNI v1|v2                  one quic-go handshake
//	go run gen.go proxy ADDR                                 an HTTP CONNECT proxy (until killed)
//	go run gen.go socks5 ADDR                                a SOCKS5 server (until killed)
//	go run gen.go pipeline ADDR                              pipelined and one-line-per-segment HTTP/1.1 requests
//	go run gen.go rewrite MODE IN OUT                        rewrite a capture (modes below)
//	go run gen.go replicate N OUT IN...                      N copies of each IN, each from its own client (benchmarks)
//
// Everything listens and connects on 127.0.0.1 only.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/quic-go/quic-go"
)

func main() {
	if len(os.Args) < 2 {
		fail(fmt.Errorf("usage: gen.go tlsclient|quicserver|quicclient|proxy|socks5|pipeline|rewrite ..."))
	}
	a := os.Args[2:]
	var err error
	switch os.Args[1] {
	case "tlsclient":
		err = tlsClient(a[0], a[1], a[2], len(a) > 3 && a[3] == "tls12")
	case "quicserver":
		err = quicServer(a[0], a[1], a[2], a[3])
	case "quicclient":
		err = quicClient(a[0], a[1], a[2])
	case "proxy":
		err = proxy(a[0])
	case "socks5":
		err = socks5(a[0])
	case "pipeline":
		err = pipeline(a[0])
	case "rewrite":
		err = rewrite(a[0], a[1], a[2])
	case "replicate":
		err = replicate(a[0], a[1], a[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gen:", err)
	os.Exit(1)
}

func tlsClient(addr, sni, alpn string, tls12 bool) error {
	cfg := &tls.Config{ServerName: sni, InsecureSkipVerify: true, NextProtos: strings.Split(alpn, ",")}
	if tls12 {
		cfg.MaxVersion = tls.VersionTLS12
	}
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return err
	}
	return c.Close()
}

func versions(v string) []quic.Version {
	if v == "v2" {
		return []quic.Version{quic.Version2}
	}
	return []quic.Version{quic.Version1}
}

func quicServer(addr, cert, key, v string) error {
	kp, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return err
	}
	l, err := quic.ListenAddr(addr, &tls.Config{Certificates: []tls.Certificate{kp}, NextProtos: []string{"h3", "guardd-test"}},
		&quic.Config{Versions: versions(v)})
	if err != nil {
		return err
	}
	for {
		c, err := l.Accept(context.Background())
		if err != nil {
			return err
		}
		go func() {
			<-c.HandshakeComplete()
			time.Sleep(200 * time.Millisecond)
			c.CloseWithError(0, "")
		}()
	}
}

func quicClient(addr, sni, v string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := quic.DialAddr(ctx, addr, &tls.Config{ServerName: sni, InsecureSkipVerify: true, NextProtos: []string{"h3"}},
		&quic.Config{Versions: versions(v)})
	if err != nil {
		return err
	}
	return c.CloseWithError(0, "")
}

func serve(addr string, handle func(net.Conn)) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	for {
		c, err := l.Accept()
		if err != nil {
			return err
		}
		go handle(c)
	}
}

func splice(a, b net.Conn) {
	go func() { io.Copy(a, b); a.Close() }()
	io.Copy(b, a)
	b.Close()
}

func proxy(addr string) error {
	return serve(addr, func(c net.Conn) {
		buf := make([]byte, 4096)
		n, _ := c.Read(buf)
		line, _, _ := strings.Cut(string(buf[:n]), "\r\n")
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "CONNECT" {
			c.Close()
			return
		}
		host, port, _ := net.SplitHostPort(f[1])
		_ = host
		up, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", port))
		if err != nil {
			c.Close()
			return
		}
		c.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
		splice(c, up)
	})
}

func socks5(addr string) error {
	return serve(addr, func(c net.Conn) {
		defer c.Close()
		b := make([]byte, 512)
		if _, err := io.ReadFull(c, b[:2]); err != nil || b[0] != 5 {
			return
		}
		io.ReadFull(c, b[:b[1]])
		c.Write([]byte{5, 0})
		if _, err := io.ReadFull(c, b[:4]); err != nil {
			return
		}
		var n int
		switch b[3] {
		case 1:
			n = 4
		case 4:
			n = 16
		case 3:
			io.ReadFull(c, b[:1])
			n = int(b[0])
		}
		io.ReadFull(c, b[:n+2])
		port := binary.BigEndian.Uint16(b[n:])
		up, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return
		}
		c.Write([]byte{5, 0, 0, 1, 127, 0, 0, 1, 0, 0})
		splice(c, up)
	})
}

// pipeline sends two requests in one segment, then one request a line per
// segment, on one keep-alive connection.
func pipeline(addr string) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	c.(*net.TCPConn).SetNoDelay(true)
	two := "GET /c.pem?x=1 HTTP/1.1\r\nHost: example.test\r\nUser-Agent: gen/1\r\nCookie: sid=1; theme=dark\r\n\r\n" +
		"HEAD /c.pem HTTP/1.1\r\nHost: example.test\r\nAccept-Language: de-DE\r\n\r\n"
	if _, err := c.Write([]byte(two)); err != nil {
		return err
	}
	time.Sleep(100 * time.Millisecond)
	for _, l := range []string{"GET /c.pem HTTP/1.1\n", "Host: example.test\n", "Referer: http://example.test/a\n", "Connection: close\n", "\n"} {
		if _, err := c.Write([]byte(l)); err != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	io.Copy(io.Discard, c)
	return nil
}

type frame struct {
	ci   gopacket.CaptureInfo
	data []byte
}

func readAll(in string) ([]frame, layers.LinkType, error) {
	f, err := os.Open(in)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		return nil, 0, err
	}
	var out []frame
	for {
		d, ci, err := r.ReadPacketData()
		if err == io.EOF {
			return out, r.LinkType(), nil
		}
		if err != nil {
			return nil, 0, err
		}
		out = append(out, frame{ci, bytes.Clone(d)})
	}
}

func writeAll(out string, lt layers.LinkType, fs []frame) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(65535, lt); err != nil {
		return err
	}
	for _, fr := range fs {
		fr.ci.CaptureLength, fr.ci.Length = len(fr.data), len(fr.data)
		if err := w.WritePacket(fr.ci, fr.data); err != nil {
			return err
		}
	}
	return f.Close()
}

var opts = gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}

// isHello reports whether an Ethernet frame carries a TCP segment starting a
// ClientHello record.
func isHello(d []byte) (*layers.IPv4, *layers.TCP, bool) {
	p := gopacket.NewPacket(d, layers.LayerTypeEthernet, gopacket.Default)
	ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	tcp, _ := p.Layer(layers.LayerTypeTCP).(*layers.TCP)
	if ip == nil || tcp == nil || len(tcp.Payload) < 6 || tcp.Payload[0] != 0x16 || tcp.Payload[5] != 1 {
		return nil, nil, false
	}
	return ip, tcp, true
}

func tcpFrame(ip *layers.IPv4, tcp *layers.TCP, seq uint32, payload []byte) []byte {
	ip2, tcp2 := *ip, *tcp
	tcp2.Seq = seq
	tcp2.SetNetworkLayerForChecksum(&ip2)
	buf := gopacket.NewSerializeBuffer()
	eth := &layers.Ethernet{SrcMAC: make([]byte, 6), DstMAC: make([]byte, 6), EthernetType: layers.EthernetTypeIPv4}
	if err := gopacket.SerializeLayers(buf, opts, eth, &ip2, &tcp2, gopacket.Payload(payload)); err != nil {
		fail(err)
	}
	return bytes.Clone(buf.Bytes())
}

// rewrite modes:
//
//	split3rev  the first ClientHello segment split in 3, written in reverse order
//	nosyn3rev  the same, without the packets before the hello (no SYN)
//	retrans    the hello segment split in 2 overlapping halves, each sent twice
//	vlan qinq gre erspan2 vxlan   each Ethernet frame wrapped
//	sll sll2 null                 each Ethernet frame's header replaced
func rewrite(mode, in, out string) error {
	fs, lt, err := readAll(in)
	if err != nil {
		return err
	}
	if lt != layers.LinkTypeEthernet {
		return fmt.Errorf("%s: link type %v, want Ethernet", in, lt)
	}
	var res []frame
	switch mode {
	case "split3rev", "nosyn3rev", "retrans":
		done := false
		for i, fr := range fs {
			ip, tcp, ok := isHello(fr.data)
			if done || !ok {
				res = append(res, fr)
				continue
			}
			done = true
			if mode == "nosyn3rev" {
				res = nil
			}
			p := tcp.Payload
			if mode == "retrans" {
				h := len(p) / 2
				a := tcpFrame(ip, tcp, tcp.Seq, p[:h+10])
				b := tcpFrame(ip, tcp, tcp.Seq+uint32(h), p[h:])
				for _, d := range [][]byte{a, a, b, b, a} {
					res = append(res, frame{fr.ci, d})
				}
				continue
			}
			n := len(p) / 3
			parts := [][2]int{{2 * n, len(p)}, {n, 2 * n}, {0, n}}
			for _, pt := range parts {
				res = append(res, frame{fr.ci, tcpFrame(ip, tcp, tcp.Seq+uint32(pt[0]), p[pt[0]:pt[1]])})
			}
			_ = i
		}
		if !done {
			return fmt.Errorf("%s: no ClientHello segment", in)
		}
		return writeAll(out, lt, res)
	}
	outLT := lt
	for _, fr := range fs {
		d := fr.data
		etype := binary.BigEndian.Uint16(d[12:14])
		inner := d[14:]
		var w []byte
		switch mode {
		case "vlan":
			w = wrap(&layers.Ethernet{SrcMAC: d[6:12], DstMAC: d[0:6], EthernetType: layers.EthernetTypeDot1Q},
				&layers.Dot1Q{VLANIdentifier: 100, Type: layers.EthernetType(etype)}, gopacket.Payload(inner))
		case "qinq":
			w = wrap(&layers.Ethernet{SrcMAC: d[6:12], DstMAC: d[0:6], EthernetType: layers.EthernetTypeQinQ},
				&layers.Dot1Q{VLANIdentifier: 200, Type: layers.EthernetTypeDot1Q},
				&layers.Dot1Q{VLANIdentifier: 100, Type: layers.EthernetType(etype)}, gopacket.Payload(inner))
		case "gre":
			w = wrap(outerEth(), outerIP(layers.IPProtocolGRE), &layers.GRE{Protocol: layers.EthernetType(etype)}, gopacket.Payload(inner))
		case "erspan2":
			w = wrap(outerEth(), outerIP(layers.IPProtocolGRE),
				&layers.GRE{Protocol: layers.EthernetTypeERSPAN, SeqPresent: true, Seq: 1},
				&layers.ERSPANII{Version: 1, VLANIdentifier: 0, SessionID: 7, Index: 1}, gopacket.Payload(d))
		case "vxlan":
			udp := &layers.UDP{SrcPort: 51000, DstPort: 4789}
			ip := outerIP(layers.IPProtocolUDP)
			udp.SetNetworkLayerForChecksum(ip)
			w = wrap(outerEth(), ip, udp, &layers.VXLAN{ValidIDFlag: true, VNI: 42}, gopacket.Payload(d))
		case "sll":
			outLT = layers.LinkTypeLinuxSLL
			h := make([]byte, 16)
			binary.BigEndian.PutUint16(h[0:], 0)   // to us
			binary.BigEndian.PutUint16(h[2:], 772) // ARPHRD_LOOPBACK
			binary.BigEndian.PutUint16(h[4:], 6)
			binary.BigEndian.PutUint16(h[14:], etype)
			w = append(h, inner...)
		case "sll2":
			outLT = layers.LinkTypeLinuxSLL2
			h := make([]byte, 20)
			binary.BigEndian.PutUint16(h[0:], etype)
			binary.BigEndian.PutUint32(h[4:], 1) // ifindex
			binary.BigEndian.PutUint16(h[8:], 772)
			h[10], h[11] = 0, 6
			w = append(h, inner...)
		case "null":
			outLT = layers.LinkTypeNull
			h := make([]byte, 4)
			fam := uint32(2)
			if etype == 0x86dd {
				fam = 30
			}
			binary.LittleEndian.PutUint32(h, fam)
			w = append(h, inner...)
		default:
			return fmt.Errorf("unknown rewrite mode %q", mode)
		}
		res = append(res, frame{fr.ci, w})
	}
	return writeAll(out, outLT, res)
}

func outerEth() *layers.Ethernet {
	return &layers.Ethernet{SrcMAC: []byte{2, 0, 0, 0, 0, 1}, DstMAC: []byte{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
}

func outerIP(p layers.IPProtocol) *layers.IPv4 {
	return &layers.IPv4{Version: 4, TTL: 64, Protocol: p, SrcIP: net.IPv4(127, 0, 0, 11), DstIP: net.IPv4(127, 0, 0, 12)}
}

func wrap(ls ...gopacket.SerializableLayer) []byte {
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, opts, ls...); err != nil {
		fail(err)
	}
	return bytes.Clone(buf.Bytes())
}

// replicate writes n copies of the conversations of each input (Ethernet,
// IPv4), copy i from client address 10.i>>16.i>>8.i and a port of its own, so
// every copy is a separate flow. The server side is recognised by its port
// (below 32768). Checksums are left stale: neither guardd nor tshark checks
// them.
func replicate(ns, out string, ins []string) error {
	var n int
	if _, err := fmt.Sscan(ns, &n); err != nil {
		return err
	}
	var inputs [][]frame
	for _, in := range ins {
		fs, lt, err := readAll(in)
		if err != nil {
			return err
		}
		if lt != layers.LinkTypeEthernet {
			return fmt.Errorf("%s: want Ethernet", in)
		}
		inputs = append(inputs, fs)
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	w := pcapgo.NewWriter(bw)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		return err
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // copies follow each other: time only grows
	buf := make([]byte, 0, 65536)
	for i := 0; i < n; i++ {
		fs := inputs[i%len(inputs)]
		cip := [4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}
		cport := uint16(20000 + i%40000)
		base := fs[0].ci.Timestamp
		for _, fr := range fs {
			d := append(buf[:0], fr.data...)
			if len(d) < 14+20 || binary.BigEndian.Uint16(d[12:]) != 0x0800 {
				continue
			}
			ihl := int(d[14]&0x0f) * 4
			l4 := 14 + ihl
			if len(d) < l4+4 {
				continue
			}
			sport, dport := binary.BigEndian.Uint16(d[l4:]), binary.BigEndian.Uint16(d[l4+2:])
			if sport < 32768 && dport >= 32768 { // server to client
				copy(d[14+16:], cip[:])
				binary.BigEndian.PutUint16(d[l4+2:], cport)
			} else {
				copy(d[14+12:], cip[:])
				binary.BigEndian.PutUint16(d[l4:], cport)
			}
			ci := fr.ci
			ci.Timestamp = at.Add(fr.ci.Timestamp.Sub(base))
			ci.CaptureLength, ci.Length = len(d), len(d)
			if err := w.WritePacket(ci, d); err != nil {
				return err
			}
		}
		at = at.Add(fs[len(fs)-1].ci.Timestamp.Sub(base) + time.Microsecond)
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Close()
}

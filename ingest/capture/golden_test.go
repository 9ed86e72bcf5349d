package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/guardd/guardd/ingest/decap"
)

var update = flag.Bool("update", false, "rewrite testdata inputs and golden files")

// exampleFiles builds the testdata captures: decodable frames in every
// container shape the reader handles.
func exampleFiles(t *testing.T) map[string][]byte {
	mac := net.HardwareAddr{2, 0, 0, 0, 0, 1}
	v4 := func(p layers.IPProtocol) *layers.IPv4 {
		return &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: p, SrcIP: net.IP{192, 0, 2, 10}, DstIP: net.IP{198, 51, 100, 20}}
	}
	v6 := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP, SrcIP: net.ParseIP("2001:db8::10"), DstIP: net.ParseIP("2001:db8::20")}
	syn := frame(t, &layers.Ethernet{SrcMAC: mac, DstMAC: mac, EthernetType: layers.EthernetTypeIPv4}, v4(layers.IPProtocolTCP), &layers.TCP{SrcPort: 40000, DstPort: 443, SYN: true, Seq: 1})
	hello := frame(t, &layers.Ethernet{SrcMAC: mac, DstMAC: mac, EthernetType: layers.EthernetTypeIPv4}, v4(layers.IPProtocolTCP), &layers.TCP{SrcPort: 40000, DstPort: 443, PSH: true, ACK: true, Seq: 2, Ack: 1}, gopacket.Payload("\x16\x03\x01\x00\x00"))
	quic := frame(t, v6, &layers.UDP{SrcPort: 50000, DstPort: 443}, gopacket.Payload("\xc0\x00\x00\x00\x01"))
	vx := frame(t, v4(layers.IPProtocolUDP), &layers.UDP{SrcPort: 33000, DstPort: 4789}, &layers.VXLAN{ValidIDFlag: true, VNI: 7},
		&layers.Ethernet{SrcMAC: mac, DstMAC: mac, EthernetType: layers.EthernetTypeIPv4}, v4(layers.IPProtocolUDP), &layers.UDP{SrcPort: 1, DstPort: 53}, gopacket.Payload("dns"))
	sll2 := append(binary.BigEndian.AppendUint16(nil, 0x0800), 0, 0, 0, 0, 0, 1, 0, 1, 4, 6)
	sll2 = append(append(sll2, mac...), 0, 0)
	sll2 = append(sll2, hello[14:]...)

	files := map[string][]byte{}

	// pcapng: two sections, three link types, an SPB and a DSB.
	var ng bytes.Buffer
	w, err := pcapgo.NewNgWriterInterface(&ng, pcapgo.NgInterface{LinkType: layers.LinkTypeEthernet, Name: "eth0"}, pcapgo.DefaultNgWriterOptions)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddInterface(pcapgo.NgInterface{LinkType: layers.LinkTypeRaw, Name: "tun0"}); err != nil {
		t.Fatal(err)
	}
	for i, f := range []struct {
		data  []byte
		iface int
	}{{syn, 0}, {quic, 1}, {vx, 1}} {
		ci := gopacket.CaptureInfo{Timestamp: t0.Add(time.Duration(i) * time.Millisecond), CaptureLength: len(f.data), Length: len(f.data), InterfaceIndex: f.iface}
		if err := w.WritePacket(ci, f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	le, be := binary.LittleEndian, binary.BigEndian
	ng.Write(ngBlock(le, 10, append(le.AppendUint32(le.AppendUint32(nil, 0x544c534b), 3), "k=v"...)))
	ng.Write(ngBlock(le, ngSPB, append(le.AppendUint32(nil, uint32(len(hello))), hello...)))
	shb := be.AppendUint32(nil, ngBOM)
	shb = be.AppendUint16(shb, 1)
	shb = be.AppendUint16(shb, 0)
	ng.Write(ngBlock(be, ngSHB, be.AppendUint64(shb, ^uint64(0))))
	ng.Write(ngBlock(be, ngIDB, append(be.AppendUint16(nil, uint16(layers.LinkTypeLinuxSLL2)), 0, 0, 0, 0, 0, 0)))
	us := uint64(t0.UnixMicro()) + 5000
	epb := be.AppendUint32(nil, 0)
	epb = be.AppendUint32(epb, uint32(us>>32))
	epb = be.AppendUint32(epb, uint32(us))
	epb = be.AppendUint32(epb, uint32(len(sll2)))
	epb = be.AppendUint32(epb, uint32(len(sll2)))
	ng.Write(ngBlock(be, ngEPB, append(epb, sll2...)))
	files["mixed.pcapng"] = ng.Bytes()

	// pcap, big endian, ns, with a record cut by the snaplen.
	recs := []rec{{time: t0, data: syn}, {time: t0.Add(time.Second), data: hello}, {time: t0.Add(2 * time.Second), data: hello[:40], length: len(hello)}}
	files["bigendian-ns.pcap"] = pcapFile(t, be, true, layers.LinkTypeEthernet, recs)
	// gzip-compressed pcap, little endian, µs.
	files["gzip-us.pcap.gz"] = gz(pcapFile(t, le, false, layers.LinkTypeEthernet, recs[:2]))
	return files
}

// listing is one line per record: what the reader gives and what Decode
// makes of it.
func listing(t *testing.T, path string) string {
	src, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	d := decap.NewDecoder(decap.Config{})
	var b strings.Builder
	var p Packet
	for {
		err := src.ReadPacket(&p)
		if err == io.EOF {
			return b.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%d %s lt=%d if=%d %d/%d ", p.Frame, p.Time.UTC().Format(time.RFC3339Nano), p.LinkType, p.Interface, p.CaptureLength, p.Length)
		var dp decap.Packet
		switch err := d.Decode(p.Data, p.LinkType, &dp); {
		case err == nil:
			fmt.Fprintf(&b, "proto=%d %s > %s flags=%#02x payload=%q encap=%#x\n",
				dp.Proto, netipPort(dp.Src.String(), dp.SrcPort), netipPort(dp.Dst.String(), dp.DstPort), dp.TCPFlags, dp.Payload, dp.Encap)
		case errors.Is(err, decap.ErrNotTransport):
			fmt.Fprintf(&b, "skip %v\n", err)
		default:
			fmt.Fprintf(&b, "error %s: %v\n", decap.OutcomeOf(err), err)
		}
	}
}

func netipPort(a string, port uint16) string { return net.JoinHostPort(a, fmt.Sprint(port)) }

// TestGolden reads the captures in testdata and compares the listing with
// the .golden files. -update rewrites both.
func TestGolden(t *testing.T) {
	if *update {
		for name, data := range exampleFiles(t) {
			if err := os.WriteFile(filepath.Join("testdata", name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	inputs, err := filepath.Glob("testdata/*.pcap*")
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) == 0 {
		t.Fatal("no testdata captures; run with -update")
	}
	for _, in := range inputs {
		if strings.HasSuffix(in, ".golden") {
			continue
		}
		t.Run(filepath.Base(in), func(t *testing.T) {
			got := listing(t, in)
			golden := in + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("listing differs from %s (rerun with -update if intended):\ngot:\n%swant:\n%s", golden, got, want)
			}
		})
	}
}

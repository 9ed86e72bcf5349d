package capture

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/klauspost/compress/zstd"
)

// rec is one expected record.
type rec struct {
	time   time.Time
	lt     layers.LinkType
	iface  int
	data   []byte
	length int // on the wire; 0 means len(data)
}

func pkt(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 20+i) }

var t0 = time.Date(2026, 11, 22, 9, 0, 0, 123456789, time.UTC)

// pcapFile writes recs with pcapgo (little endian) or by hand (big endian,
// which pcapgo cannot write).
func pcapFile(t *testing.T, order binary.ByteOrder, nanos bool, lt layers.LinkType, recs []rec) []byte {
	t.Helper()
	var buf bytes.Buffer
	if order == binary.LittleEndian {
		w := pcapgo.NewWriter(&buf)
		if nanos {
			w = pcapgo.NewWriterNanos(&buf)
		}
		if err := w.WriteFileHeader(65535, lt); err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			ci := gopacket.CaptureInfo{Timestamp: r.time, CaptureLength: len(r.data), Length: max(r.length, len(r.data))}
			if err := w.WritePacket(ci, r.data); err != nil {
				t.Fatal(err)
			}
		}
		return buf.Bytes()
	}
	magic := uint32(pcapMicro)
	if nanos {
		magic = pcapNano
	}
	h := make([]byte, 24)
	order.PutUint32(h, magic)
	order.PutUint16(h[4:], 2)
	order.PutUint16(h[6:], 4)
	order.PutUint32(h[16:], 65535)
	order.PutUint32(h[20:], uint32(lt)|1<<28) // FCS bits set: must be masked
	buf.Write(h)
	for _, r := range recs {
		rh := make([]byte, 16)
		order.PutUint32(rh, uint32(r.time.Unix()))
		frac := r.time.Nanosecond()
		if !nanos {
			frac /= 1000
		}
		order.PutUint32(rh[4:], uint32(frac))
		order.PutUint32(rh[8:], uint32(len(r.data)))
		order.PutUint32(rh[12:], uint32(max(r.length, len(r.data))))
		buf.Write(rh)
		buf.Write(r.data)
	}
	return buf.Bytes()
}

// ngBlock frames a pcapng block body.
func ngBlock(order binary.AppendByteOrder, typ uint32, body []byte) []byte {
	body = append(body, make([]byte, (4-len(body)%4)%4)...)
	n := uint32(len(body) + 12)
	b := order.AppendUint32(nil, typ)
	b = order.AppendUint32(b, n)
	b = append(b, body...)
	return order.AppendUint32(b, n)
}

func ngOpt(order binary.AppendByteOrder, code uint16, v []byte) []byte {
	b := order.AppendUint16(nil, code)
	b = order.AppendUint16(b, uint16(len(v)))
	b = append(b, v...)
	return append(b, make([]byte, (4-len(v)%4)%4)...)
}

// pcapngFile builds two sections. The first, written by pcapgo (little
// endian, ns), has an Ethernet and a raw-IP interface, packets on both, an
// interface statistics block, a decryption secrets block and a simple packet
// block. The second, big endian and written by hand, has an SLL2 interface
// with µs timestamps (the default) and a raw interface with 2^-20 s units
// and an offset, an old packet block and an EPB.
func pcapngFile(t *testing.T) ([]byte, []rec) {
	t.Helper()
	var buf bytes.Buffer
	w, err := pcapgo.NewNgWriterInterface(&buf, pcapgo.NgInterface{LinkType: layers.LinkTypeEthernet, Name: "eth0"}, pcapgo.DefaultNgWriterOptions)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddInterface(pcapgo.NgInterface{LinkType: layers.LinkTypeRaw, Name: "tun0"}); err != nil {
		t.Fatal(err)
	}
	want := []rec{
		{time: t0, lt: layers.LinkTypeEthernet, data: pkt(1)},
		{time: t0.Add(time.Millisecond), lt: layers.LinkTypeRaw, iface: 1, data: pkt(2), length: 1500},
	}
	for _, r := range want {
		ci := gopacket.CaptureInfo{Timestamp: r.time, CaptureLength: len(r.data), Length: max(r.length, len(r.data)), InterfaceIndex: r.iface}
		if err := w.WritePacket(ci, r.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteInterfaceStats(0, pcapgo.NgInterfaceStatistics{LastUpdate: t0, PacketsReceived: 2}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	buf.Write(ngBlock(le, 10, append(le.AppendUint32(le.AppendUint32(nil, 0x544c534b), 5), "CLIENT_RANDOM x y"...)))
	spb := pkt(3)
	buf.Write(ngBlock(le, ngSPB, append(le.AppendUint32(nil, uint32(len(spb))), spb...)))
	want = append(want, rec{time: want[1].time, lt: layers.LinkTypeEthernet, data: spb}) // SPB: interface 0, previous time

	be := binary.BigEndian
	shb := be.AppendUint32(nil, ngBOM)
	shb = be.AppendUint16(shb, 1)
	shb = be.AppendUint16(shb, 0)
	shb = be.AppendUint64(shb, ^uint64(0))
	buf.Write(ngBlock(be, ngSHB, shb))
	idb := func(lt layers.LinkType, opts ...[]byte) []byte {
		b := be.AppendUint16(nil, uint16(lt))
		b = be.AppendUint16(b, 0)
		b = be.AppendUint32(b, 0)
		for _, o := range opts {
			b = append(b, o...)
		}
		return ngBlock(be, ngIDB, append(b, 0, 0, 0, 0))
	}
	buf.Write(idb(layers.LinkTypeLinuxSLL2))
	buf.Write(idb(layers.LinkTypeRaw, ngOpt(be, optTsresol, []byte{0x80 | 20}), ngOpt(be, optTsoffset, be.AppendUint64(nil, 100))))
	buf.Write(idb(layers.LinkTypeIPv4, ngOpt(be, optTsresol, []byte{12}))) // picoseconds
	// Old packet block on interface 0: µs.
	us := uint64(t0.UnixMicro() + 5)
	pb := be.AppendUint16(nil, 0)
	pb = be.AppendUint16(pb, 0)
	pb = be.AppendUint32(pb, uint32(us>>32))
	pb = be.AppendUint32(pb, uint32(us))
	pb = be.AppendUint32(pb, uint32(len(pkt(4))))
	pb = be.AppendUint32(pb, uint32(len(pkt(4))))
	buf.Write(ngBlock(be, ngPB, append(pb, pkt(4)...)))
	want = append(want, rec{time: time.UnixMicro(t0.UnixMicro() + 5), lt: layers.LinkTypeLinuxSLL2, data: pkt(4)})
	// EPB on interface 1: 2^-20 s units, +100 s.
	ticks := uint64(1_700_000_000)<<20 | 1<<19 // .5 s
	epb := be.AppendUint32(nil, 1)
	epb = be.AppendUint32(epb, uint32(ticks>>32))
	epb = be.AppendUint32(epb, uint32(ticks))
	epb = be.AppendUint32(epb, uint32(len(pkt(5))))
	epb = be.AppendUint32(epb, 9000)
	epb = append(epb, pkt(5)...)
	epb = append(epb, make([]byte, (4-len(pkt(5))%4)%4)...)
	epb = append(epb, ngOpt(be, 1, []byte("comment"))...)
	buf.Write(ngBlock(be, ngEPB, append(epb, 0, 0, 0, 0)))
	want = append(want, rec{time: time.Unix(1_700_000_100, 5e8), lt: layers.LinkTypeRaw, iface: 1, data: pkt(5), length: 9000})
	// EPB on interface 2: picoseconds, cut to nanoseconds.
	// 64 bits of picoseconds reach only 1970-07. Wireshark 4.0 computes
	// frac*1e9 in 64 bits, which overflows past 18 ms: keep below for tshark.
	ps := uint64(10_000_000)*1e12 + 12_345_678_999
	epb = be.AppendUint32(nil, 2)
	epb = be.AppendUint32(epb, uint32(ps>>32))
	epb = be.AppendUint32(epb, uint32(ps))
	epb = be.AppendUint32(epb, uint32(len(pkt(6))))
	epb = be.AppendUint32(epb, uint32(len(pkt(6))))
	buf.Write(ngBlock(be, ngEPB, append(epb, pkt(6)...)))
	want = append(want, rec{time: time.Unix(10_000_000, 12_345_678), lt: layers.LinkTypeIPv4, iface: 2, data: pkt(6)})
	return buf.Bytes(), want
}

func writeTemp(t *testing.T, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func gz(b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

func zst(t *testing.T, b []byte) []byte {
	w, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	return w.EncodeAll(b, nil)
}

func readAll(t *testing.T, path string) []Packet {
	t.Helper()
	s, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []Packet
	for {
		var p Packet
		err := s.ReadPacket(&p)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("after %d packets: %v", len(out), err)
		}
		p.Data = bytes.Clone(p.Data)
		out = append(out, p)
	}
}

func checkRecs(t *testing.T, got []Packet, want []rec, res time.Duration) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d packets, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		wl := max(w.length, len(w.data))
		if g.Frame != i+1 || !g.Time.Equal(w.time.Truncate(res)) || g.LinkType != w.lt || g.Interface != w.iface ||
			!bytes.Equal(g.Data, w.data) || g.CaptureLength != len(w.data) || g.Length != wl {
			t.Errorf("record %d: got frame %d %v lt %d if %d len %d/%d %x\nwant %v lt %d if %d len %d/%d %x", i,
				g.Frame, g.Time.UTC(), g.LinkType, g.Interface, g.CaptureLength, g.Length, g.Data,
				w.time.UTC().Truncate(res), w.lt, w.iface, len(w.data), wl, w.data)
		}
	}
}

func TestOpenFile(t *testing.T) {
	recs := []rec{{time: t0, lt: layers.LinkTypeEthernet, data: pkt(1)}, {time: t0.Add(1500 * time.Millisecond), lt: layers.LinkTypeEthernet, data: pkt(2), length: 4000}}
	ng, ngRecs := pcapngFile(t)
	bigRecs := []rec{{time: t0, lt: layers.LinkTypeEthernet, data: bytes.Repeat([]byte{1}, 65550)}, {time: t0, lt: layers.LinkTypeEthernet, data: pkt(9)},
		{time: t0, lt: layers.LinkTypeEthernet, data: bytes.Repeat([]byte{2}, MaxCaptureLength)}}
	cases := []struct {
		name string
		file string // name on disk: the format never comes from it
		data []byte
		want []rec
		res  time.Duration
	}{
		{"pcap le us", "a.pcap", pcapFile(t, binary.LittleEndian, false, layers.LinkTypeEthernet, recs), recs, time.Microsecond},
		{"pcap le ns", "a.pcapng", pcapFile(t, binary.LittleEndian, true, layers.LinkTypeEthernet, recs), recs, time.Nanosecond},
		{"pcap be us", "a.cap", pcapFile(t, binary.BigEndian, false, layers.LinkTypeEthernet, recs), recs, time.Microsecond},
		{"pcap be ns", "a", pcapFile(t, binary.BigEndian, true, layers.LinkTypeEthernet, recs), recs, time.Nanosecond},
		{"pcapng two sections", "b.pcap", ng, ngRecs, time.Nanosecond},
		{"pcap gzip", "c.pcap", gz(pcapFile(t, binary.BigEndian, true, layers.LinkTypeEthernet, recs)), recs, time.Nanosecond},
		{"pcapng gzip", "c.pcapng.gz", gz(ng), ngRecs, time.Nanosecond},
		{"pcapng zstd", "c.zst", zst(t, ng), ngRecs, time.Nanosecond},
		{"pcap records beyond the read buffer", "big.pcap", pcapFile(t, binary.BigEndian, true, layers.LinkTypeEthernet, bigRecs), bigRecs, time.Nanosecond},
		{"pcap empty", "e.pcap", pcapFile(t, binary.LittleEndian, false, layers.LinkTypeEthernet, nil), nil, time.Nanosecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkRecs(t, readAll(t, writeTemp(t, c.file, c.data)), c.want, c.res)
		})
	}
}

func TestOpenFileErrors(t *testing.T) {
	recs := []rec{{time: t0, data: pkt(1)}, {time: t0, data: pkt(2)}}
	good := pcapFile(t, binary.LittleEndian, false, layers.LinkTypeEthernet, recs)
	lying := bytes.Clone(good)
	binary.LittleEndian.PutUint32(lying[24+8:], 0xfffffff0)
	ng, _ := pcapngFile(t)
	ngLying := bytes.Clone(ng)
	// The first EPB follows the SHB and two IDBs written by pcapgo.
	epbAt := bytes.Index(ngLying, []byte{6, 0, 0, 0})
	binary.LittleEndian.PutUint32(ngLying[epbAt+4:], 0x7ffffff0)
	badIface := bytes.Clone(ng)
	binary.LittleEndian.PutUint32(badIface[epbAt+8:], 7)
	cases := []struct {
		name    string
		data    []byte
		open    string // error from OpenFile
		packets int    // whole packets before the error
		read    string
		eof     bool // the error wraps io.ErrUnexpectedEOF
	}{
		{name: "empty file", data: nil, open: "magic", eof: true},
		{name: "not a capture", data: []byte("GET / HTTP/1.1\r\n\r\n...................."), open: "not a pcap or pcapng file"},
		{name: "pcap header cut", data: good[:20], open: "file header", eof: true},
		{name: "pcap version 3", data: append(append([]byte{}, good[:4]...), append([]byte{3, 0}, good[6:]...)...), open: "pcap version 3"},
		{name: "record cut", data: good[:len(good)-3], packets: 1, read: "frame 2 at byte", eof: true},
		{name: "record header cut", data: good[:len(good)-len(pkt(2))-10], packets: 1, read: "frame 2", eof: true},
		{name: "lying capture length", data: lying, read: "frame 1 at byte 24: capture length 4294967280 exceeds 262144"},
		{name: "pcapng lying block length", data: ngLying, read: "frame 1 at byte"},
		{name: "pcapng undescribed interface", data: badIface, read: "interface 7 not described"},
		{name: "pcapng cut", data: ng[:len(ng)-2], packets: 5, read: "frame 6", eof: true},
		{name: "pcapng bad bom", data: append(bytes.Clone(ng[:8]), 1, 2, 3, 4), open: "byte-order magic"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeTemp(t, "x", c.data)
			s, err := OpenFile(path)
			if c.open != "" {
				if err == nil || !strings.Contains(err.Error(), c.open) || !strings.Contains(err.Error(), path) {
					t.Fatalf("OpenFile: %v, want an error naming the file and %q", err, c.open)
				}
				if c.eof != errors.Is(err, io.ErrUnexpectedEOF) {
					t.Errorf("wraps ErrUnexpectedEOF: %v, want %v", !c.eof, c.eof)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var p Packet
			n := 0
			for err = s.ReadPacket(&p); err == nil; err = s.ReadPacket(&p) {
				n++
			}
			if n != c.packets || err == io.EOF || !strings.Contains(err.Error(), c.read) || !strings.Contains(err.Error(), path) {
				t.Fatalf("read %d packets then %v; want %d then an error naming the file and %q", n, err, c.packets, c.read)
			}
			if c.eof != errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("wraps ErrUnexpectedEOF: %v, want %v", !c.eof, c.eof)
			}
		})
	}
}

func TestReadPacketAllocs(t *testing.T) {
	var recs []rec
	for i := range 300 {
		recs = append(recs, rec{time: t0, data: pkt(i % 200)})
	}
	ng, _ := pcapngFile(t)
	for name, data := range map[string][]byte{"pcap": pcapFile(t, binary.LittleEndian, true, layers.LinkTypeEthernet, recs), "pcapng": ng} {
		s, err := NewFileSource(name, bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		var p Packet
		if err := s.ReadPacket(&p); err != nil { // first read sizes the buffer
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(3, func() {
			if err := s.ReadPacket(&p); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocs per ReadPacket", name, allocs)
		}
	}
}

// TestKuznetzov reads the "modified" pcap format (magic a1b2cd34), whose
// record headers carry 8 more bytes (interface index, protocol, type).
func TestKuznetzov(t *testing.T) {
	le := binary.LittleEndian
	h := le.AppendUint32(nil, pcapKuznet)
	h = le.AppendUint16(h, 2)
	h = le.AppendUint16(h, 4)
	h = append(h, make([]byte, 8)...)
	h = le.AppendUint32(h, 65535)
	h = le.AppendUint32(h, uint32(layers.LinkTypeEthernet))
	for i := 1; i <= 2; i++ {
		h = le.AppendUint32(h, uint32(t0.Unix()))
		h = le.AppendUint32(h, 250_000)
		h = le.AppendUint32(h, uint32(len(pkt(i))))
		h = le.AppendUint32(h, uint32(len(pkt(i))))
		h = append(h, 3, 0, 0, 0, 0, 8, 0, 0) // ifindex, protocol, pkt_type, pad
		h = append(h, pkt(i)...)
	}
	at := time.Unix(t0.Unix(), 250_000_000)
	checkRecs(t, readAll(t, writeTemp(t, "k.pcap", h)), []rec{{time: at, lt: layers.LinkTypeEthernet, data: pkt(1)}, {time: at, lt: layers.LinkTypeEthernet, data: pkt(2)}}, time.Nanosecond)
}

func TestTimestampResolution(t *testing.T) {
	cases := []struct {
		name   string
		tsres  byte
		ts     uint64
		offset int64
		want   time.Time
	}{
		{"microseconds", 6, 1_700_000_000_123_456, 0, time.Unix(1_700_000_000, 123_456_000)},
		{"nanoseconds", 9, 1_700_000_000_123_456_789, 0, time.Unix(1_700_000_000, 123_456_789)},
		{"seconds", 0, 1_700_000_000, 0, time.Unix(1_700_000_000, 0)},
		{"picoseconds, large fraction", 12, 10_000_000*1e12 + 999_999_999_999, 0, time.Unix(10_000_000, 999_999_999)},
		{"2^-10 with offset", 0x80 | 10, 5<<10 | 512, 60, time.Unix(65, 500_000_000)},
		{"2^-63", 0x80 | 63, 1<<63 - 1, 0, time.Unix(0, 999_999_999)},
		{"2^0", 0x80, 42, 0, time.Unix(42, 0)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &FileSource{order: binary.LittleEndian}
			body := binary.LittleEndian.AppendUint16(nil, 1)
			body = append(body, 0, 0, 0, 0, 0, 0)
			body = append(body, ngOpt(binary.LittleEndian, optTsresol, []byte{c.tsres})...)
			body = append(body, ngOpt(binary.LittleEndian, optTsoffset, binary.LittleEndian.AppendUint64(nil, uint64(c.offset)))...)
			if err := s.addInterface(body); err != nil {
				t.Fatal(err)
			}
			if got := s.ifaces[0].timestamp(c.ts); !got.Equal(c.want) {
				t.Errorf("got %v, want %v", got.UTC(), c.want.UTC())
			}
		})
	}
	s := &FileSource{order: binary.LittleEndian}
	if err := s.addInterface(append([]byte{1, 0, 0, 0, 0, 0, 0, 0}, ngOpt(binary.LittleEndian, optTsresol, []byte{20})...)); err == nil {
		t.Error("if_tsresol 10^-20 accepted")
	}
}

package capture

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"testing"
)

// readSingly reads every packet of a capture with ReadPacket, copying Data.
func readSingly(t *testing.T, data []byte) ([]Packet, error) {
	t.Helper()
	s, err := NewFileSource("x", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []Packet
	for {
		var p Packet
		if err := s.ReadPacket(&p); err != nil {
			return out, err
		}
		p.Data = bytes.Clone(p.Data)
		out = append(out, p)
	}
}

// readBatches reads every packet with ReadBatch, n at a time, through a ring
// of three Batches, checking each batch's packets against the copies taken
// when they were read just before the Batch is reused: Data must stay put
// while the next batches are read.
func readBatches(t *testing.T, data []byte, n int) ([]Packet, error) {
	t.Helper()
	s, err := NewFileSource("x", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ring := []*Batch{NewBatch(n), NewBatch(n), NewBatch(n)}
	var out []Packet
	starts := make([]int, len(ring)) // where each Batch's packets start in out
	for i := 0; ; i++ {
		b := ring[i%len(ring)]
		if i >= len(ring) {
			for j, p := range b.Packets {
				if !bytes.Equal(p.Data, out[starts[i%len(ring)]+j].Data) {
					t.Fatalf("batch %d packet %d changed before its Batch was reused", i-len(ring), j)
				}
			}
		}
		err := s.ReadBatch(b)
		if len(b.Packets) > n {
			t.Fatalf("batch of %d packets, want at most %d", len(b.Packets), n)
		}
		if err == nil && len(b.Packets) == 0 {
			t.Fatal("empty batch without an error")
		}
		starts[i%len(ring)] = len(out)
		for _, p := range b.Packets {
			if cap(p.Data) != len(p.Data) {
				t.Fatalf("frame %d: Data has room to grow into the next packet", p.Frame)
			}
			q := p
			q.Data = bytes.Clone(p.Data)
			out = append(out, q)
		}
		if err != nil {
			return out, err
		}
	}
}

func samePackets(t *testing.T, got, want []Packet, gotErr, wantErr error) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d packets, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Frame != w.Frame || !g.Time.Equal(w.Time) || g.CaptureLength != w.CaptureLength || g.Length != w.Length ||
			g.LinkType != w.LinkType || g.Interface != w.Interface || !bytes.Equal(g.Data, w.Data) {
			t.Fatalf("packet %d: got frame %d %v %d/%d %v if %d, want frame %d %v %d/%d %v if %d", i,
				g.Frame, g.Time, g.CaptureLength, g.Length, g.LinkType, g.Interface,
				w.Frame, w.Time, w.CaptureLength, w.Length, w.LinkType, w.Interface)
		}
	}
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("error %v, want %v", gotErr, wantErr)
	}
}

// TestReadBatch checks that ReadBatch gives what ReadPacket gives, whatever
// the batch size, on captures larger than a batch's buffer: pcap, pcapng with
// sections, interfaces and skipped blocks on batch boundaries, compressed,
// and cut short inside a record.
func TestReadBatch(t *testing.T) {
	ng, _ := pcapngFile(t)
	bigNG := captureBytes(t, true, 4000)
	bigPcap := captureBytes(t, false, 6000)
	le := binary.LittleEndian
	hugeSkip := ngBlock(le, 0xbad, make([]byte, 3<<20)) // skipped past the buffer
	sections := bytes.Join([][]byte{bigNG, ng, hugeSkip, bigNG[:len(bigNG)/2]}, nil)
	// Records larger than a batch's first buffer, which grows for them: pcap
	// packets of MaxCaptureLength, and a pcapng EPB with 900 KB of options.
	var huge []rec
	for i := range 6 {
		huge = append(huge, rec{time: t0, data: pkt(i)}, rec{time: t0, data: bytes.Repeat([]byte{byte(i)}, MaxCaptureLength)})
	}
	epb := le.AppendUint32(nil, 0)
	epb = le.AppendUint64(epb, 0)
	epb = le.AppendUint32(epb, 64)
	epb = le.AppendUint32(epb, 64)
	epb = append(epb, pkt(44)...)
	for range 14 {
		epb = append(epb, ngOpt(le, 1, make([]byte, 64000))...)
	}
	bigBlock := append(bytes.Clone(bigNG), ngBlock(le, ngEPB, append(epb, 0, 0, 0, 0))...)
	bigBlock = append(bigBlock, bigNG...)
	inputs := map[string][]byte{
		"pcap_huge_packets": pcapFile(t, le, false, 1, huge),
		"pcapng_huge_block": bigBlock,
		"pcap":              bigPcap,
		"pcap_cut":          bigPcap[:len(bigPcap)-100],
		"pcap_gz":           gz(bigPcap),
		"pcapng_sections":   sections,
		"pcapng_small":      ng,
		"pcapng_cut_header": bigNG[:len(bigNG)-len(bigNG)%4096-2],
	}
	for _, name := range []string{"bigendian-ns.pcap", "gzip-us.pcap.gz", "mixed.pcapng"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		inputs[name] = b
	}
	for name, data := range inputs {
		want, wantErr := readSingly(t, data)
		if len(want) == 0 {
			t.Fatalf("%s: no packet", name)
		}
		for _, n := range []int{1, 7, 1024, 1 << 20} {
			t.Run(fmt.Sprintf("%s/%d", name, n), func(t *testing.T) {
				got, err := readBatches(t, data, n)
				samePackets(t, got, want, err, wantErr)
			})
		}
	}
}

// TestReadPacketAfterBatch: ReadPacket goes on where a batch stopped and
// leaves the batch's packets alone.
func TestReadPacketAfterBatch(t *testing.T) {
	data := captureBytes(t, false, 3000)
	want, wantErr := readSingly(t, data)
	s, err := NewFileSource("x", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := NewBatch(100)
	if err := s.ReadBatch(b); err != nil {
		t.Fatal(err)
	}
	keep := bytes.Clone(b.Packets[99].Data)
	got := append([]Packet(nil), b.Packets...)
	for {
		var p Packet
		err = s.ReadPacket(&p)
		if err != nil {
			break
		}
		p.Data = bytes.Clone(p.Data)
		got = append(got, p)
	}
	if !bytes.Equal(b.Packets[99].Data, keep) {
		t.Error("ReadPacket overwrote the batch's packets")
	}
	samePackets(t, got, want, err, wantErr)
	if err != io.EOF {
		t.Errorf("err = %v, want io.EOF", err)
	}
}

package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/gopacket/gopacket/layers"
)

// FuzzOpenFile reads arbitrary bytes as a capture: an error or packets, never
// a panic, frames numbered one by one and lengths within the caps whatever
// the length fields say (records are handed out of a fixed-size buffer).
func FuzzOpenFile(f *testing.F) {
	recs := []rec{{time: t0, data: pkt(1)}, {time: t0, data: pkt(2), length: 3000}}
	ng, _ := pcapngFile(&testing.T{})
	for _, b := range [][]byte{
		ng,
		gz(ng),
		pcapFile(&testing.T{}, binary.LittleEndian, false, layers.LinkTypeEthernet, recs),
		pcapFile(&testing.T{}, binary.BigEndian, true, layers.LinkTypeRaw, recs),
	} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		s, err := NewFileSource("fuzz", bytes.NewReader(data))
		if err != nil {
			return
		}
		defer s.Close()
		var want []Packet
		var wantErr error
		for i := 1; i <= 1000; i++ {
			var p Packet
			if wantErr = s.ReadPacket(&p); wantErr != nil {
				break
			}
			if p.Frame != i {
				t.Fatalf("frame %d, want %d", p.Frame, i)
			}
			if len(p.Data) != p.CaptureLength || p.CaptureLength > MaxCaptureLength || p.Length < p.CaptureLength {
				t.Fatalf("lengths: data %d caplen %d len %d", len(p.Data), p.CaptureLength, p.Length)
			}
			p.Data = bytes.Clone(p.Data)
			want = append(want, p)
		}
		// ReadBatch, three packets at a time, gives the same.
		bs, err := NewFileSource("fuzz", bytes.NewReader(data))
		if err != nil {
			t.Fatalf("second open: %v", err)
		}
		defer bs.Close()
		var got []Packet
		var gotErr error
		b := NewBatch(3)
		for len(got) < len(want) || len(want) < 1000 && gotErr == nil {
			gotErr = bs.ReadBatch(b)
			for _, p := range b.Packets { // b is reused: keep copies
				p.Data = bytes.Clone(p.Data)
				got = append(got, p)
			}
			if gotErr != nil {
				break
			}
		}
		if len(want) == 1000 {
			got, gotErr = got[:min(len(got), 1000)], nil
			wantErr = nil
		}
		// A decompressor may report a corrupt stream differently when
		// asked for more at once: then both must fail, at the same packet.
		sameErr := fmt.Sprint(gotErr) == fmt.Sprint(wantErr) ||
			compressed(data) && gotErr != nil && wantErr != nil && !errors.Is(gotErr, io.EOF) && !errors.Is(wantErr, io.EOF)
		if len(got) != len(want) || !sameErr {
			t.Fatalf("ReadBatch: %d packets, error %v; ReadPacket: %d packets, error %v", len(got), gotErr, len(want), wantErr)
		}
		for i := range want {
			g, w := got[i], want[i]
			if g.Frame != w.Frame || !g.Time.Equal(w.Time) || g.Length != w.Length || g.LinkType != w.LinkType ||
				g.Interface != w.Interface || !bytes.Equal(g.Data, w.Data) {
				t.Fatalf("packet %d differs: ReadBatch %+v, ReadPacket %+v", i, g, w)
			}
		}
	})
}

// compressed reports a gzip or zstd magic number.
func compressed(b []byte) bool {
	return len(b) >= 4 && (b[0] == 0x1f && b[1] == 0x8b || binary.LittleEndian.Uint32(b) == 0xfd2fb528)
}

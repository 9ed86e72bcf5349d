package capture

import (
	"bytes"
	"encoding/binary"
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
		var p Packet
		for i := 1; i <= 1000; i++ {
			if err := s.ReadPacket(&p); err != nil {
				break
			}
			if p.Frame != i {
				t.Fatalf("frame %d, want %d", p.Frame, i)
			}
			if len(p.Data) != p.CaptureLength || p.CaptureLength > MaxCaptureLength || p.Length < p.CaptureLength {
				t.Fatalf("lengths: data %d caplen %d len %d", len(p.Data), p.CaptureLength, p.Length)
			}
		}
	})
}

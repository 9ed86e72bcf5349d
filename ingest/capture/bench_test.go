package capture

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// captureBytes is n Ethernet frames of mixed sizes (66 to 1514 bytes,
// about 610 on average) as pcap (ns) or pcapng.
func captureBytes(b *testing.B, ng bool, n int) []byte {
	var buf bytes.Buffer
	var (
		write func(gopacket.CaptureInfo, []byte) error
		flush = func() error { return nil }
	)
	if ng {
		w, err := pcapgo.NewNgWriter(&buf, layers.LinkTypeEthernet)
		if err != nil {
			b.Fatal(err)
		}
		write, flush = w.WritePacket, w.Flush
	} else {
		w := pcapgo.NewWriterNanos(&buf)
		if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
			b.Fatal(err)
		}
		write = w.WritePacket
	}
	frame := make([]byte, 1514)
	sizes := []int{66, 66, 1514, 583, 66, 1514, 120, 900}
	for i := range n {
		size := sizes[i%len(sizes)]
		binary.BigEndian.PutUint32(frame, uint32(i))
		ci := gopacket.CaptureInfo{Timestamp: t0.Add(time.Duration(i) * time.Microsecond), CaptureLength: size, Length: size}
		if err := write(ci, frame[:size]); err != nil {
			b.Fatal(err)
		}
	}
	if err := flush(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

func writeTempB(b *testing.B, name string, data []byte) string {
	path := filepath.Join(b.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

func BenchmarkReadPacket(b *testing.B) {
	for _, ng := range []bool{false, true} {
		name := map[bool]string{false: "pcap", true: "pcapng"}[ng]
		b.Run(name, func(b *testing.B) {
			data := captureBytes(b, ng, 100_000)
			path := writeTempB(b, name, data)
			s, err := OpenFile(path)
			if err != nil {
				b.Fatal(err)
			}
			var p Packet
			var bytesRead int64
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				err := s.ReadPacket(&p)
				if err == io.EOF {
					s.Close()
					if s, err = OpenFile(path); err != nil {
						b.Fatal(err)
					}
					err = s.ReadPacket(&p)
				}
				if err != nil {
					b.Fatal(err)
				}
				bytesRead += int64(len(p.Data))
			}
			s.Close()
			el := time.Since(start).Seconds()
			b.ReportMetric(float64(b.N)/el, "packets/s")
			b.ReportMetric(float64(bytesRead)/el/1e6, "MB/s")
		})
	}
}

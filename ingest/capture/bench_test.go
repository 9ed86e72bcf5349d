package capture

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/guardd/guardd/cputime"
	"github.com/guardd/guardd/ingest/decap"
)

// captureBytes is n Ethernet/IPv4/TCP frames of mixed sizes (66 to 1514
// bytes, about 610 on average) as pcap (ns) or pcapng.
func captureBytes(b testing.TB, ng bool, n int) []byte {
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
	var frames [][]byte
	for _, size := range []int{66, 66, 1514, 583, 66, 1514, 120, 900} {
		buf := gopacket.NewSerializeBuffer()
		err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true},
			&layers.Ethernet{SrcMAC: make(net.HardwareAddr, 6), DstMAC: make(net.HardwareAddr, 6), EthernetType: layers.EthernetTypeIPv4},
			&layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: net.IP{192, 0, 2, 1}, DstIP: net.IP{192, 0, 2, 2}},
			&layers.TCP{SrcPort: 40000, DstPort: 443, ACK: true, DataOffset: 5}, gopacket.Payload(make([]byte, size-54)))
		if err != nil {
			b.Fatal(err)
		}
		frames = append(frames, buf.Bytes())
	}
	for i := range n {
		frame := frames[i%len(frames)]
		binary.BigEndian.PutUint32(frame[38:], uint32(i)) // sequence number
		ci := gopacket.CaptureInfo{Timestamp: t0.Add(time.Duration(i) * time.Microsecond), CaptureLength: len(frame), Length: len(frame)}
		if err := write(ci, frame); err != nil {
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
			start, cpu0 := time.Now(), cputime.Process()
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
			reportCPU(b, cpu0)
		})
	}
}

// BenchmarkReadBatch reads as sniff.ReadFile does: batches of 1024 packets,
// straight into the batch's buffer.
func BenchmarkReadBatch(b *testing.B) {
	path := writeTempB(b, "x.pcap", captureBytes(b, false, 100_000))
	s, err := OpenFile(path)
	if err != nil {
		b.Fatal(err)
	}
	batch := NewBatch(1024)
	var packets, bytesRead int64
	b.ReportAllocs()
	start, cpu0 := time.Now(), cputime.Process()
	for b.Loop() {
		err := s.ReadBatch(batch)
		if err == io.EOF {
			s.Close()
			if s, err = OpenFile(path); err != nil {
				b.Fatal(err)
			}
		} else if err != nil {
			b.Fatal(err)
		}
		for _, p := range batch.Packets {
			bytesRead += int64(len(p.Data))
		}
		packets += int64(len(batch.Packets))
	}
	s.Close()
	el := time.Since(start).Seconds()
	b.ReportMetric(float64(packets)/el, "packets/s")
	b.ReportMetric(float64(bytesRead)/el/1e6, "MB/s")
	b.ReportMetric(float64(cputime.Since(cpu0))/float64(packets), "cpu-ns/packet")
}

// BenchmarkReadDecode is the front of the sniffer on one core: read a pcap
// record and decode it to its TCP header.
func BenchmarkReadDecode(b *testing.B) {
	path := writeTempB(b, "x.pcap", captureBytes(b, false, 100_000))
	s, err := OpenFile(path)
	if err != nil {
		b.Fatal(err)
	}
	d := decap.NewDecoder(decap.Config{})
	var (
		p  Packet
		dp decap.Packet
	)
	b.ReportAllocs()
	start, cpu0 := time.Now(), cputime.Process()
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
		if err := d.Decode(p.Data, p.LinkType, &dp); err != nil {
			b.Fatal(err)
		}
	}
	s.Close()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "packets/s")
	reportCPU(b, cpu0)
}

// reportCPU adds cpu-ns/op and the packets per second one core sustains.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	per := float64(cputime.Since(cpu0)) / float64(b.N)
	b.ReportMetric(per, "cpu-ns/op")
	b.ReportMetric(1e9/per, "packets/cpu-s")
}

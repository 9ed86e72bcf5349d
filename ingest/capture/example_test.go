package capture_test

import (
	"errors"
	"fmt"
	"io"

	"github.com/guardd/guardd/ingest/capture"
	"github.com/guardd/guardd/ingest/decap"
)

// Read every record of a capture and decode it down to TCP or UDP.
func ExampleOpenFile() {
	src, err := capture.OpenFile("testdata/mixed.pcapng")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	dec := decap.NewDecoder(decap.Config{Defragment: true})
	var (
		p  capture.Packet
		dp decap.Packet
	)
	for {
		if err := src.ReadPacket(&p); err != nil {
			if err != io.EOF {
				fmt.Println(err)
			}
			return
		}
		switch err := dec.Decode(p.Data, p.LinkType, &dp); {
		case errors.Is(err, decap.ErrNotTransport):
			continue // ARP, ICMP, a fragment held for reassembly ...
		case err != nil:
			fmt.Println(p.Frame, decap.OutcomeOf(err))
			continue
		}
		fmt.Printf("frame %d link %d: %v:%d > %v:%d, %d payload bytes\n", p.Frame, p.LinkType, dp.Src, dp.SrcPort, dp.Dst, dp.DstPort, len(dp.Payload))
	}
	// Output:
	// frame 1 link 1: 192.0.2.10:40000 > 198.51.100.20:443, 0 payload bytes
	// frame 2 link 101: 2001:db8::10:50000 > 2001:db8::20:443, 5 payload bytes
	// frame 3 link 101: 192.0.2.10:1 > 198.51.100.20:53, 3 payload bytes
	// frame 4 link 1: 192.0.2.10:40000 > 198.51.100.20:443, 5 payload bytes
	// frame 5 link 276: 192.0.2.10:40000 > 198.51.100.20:443, 5 payload bytes
}

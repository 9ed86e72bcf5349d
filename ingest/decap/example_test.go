package decap_test

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/gopacket/gopacket/layers"
	"github.com/guardd/guardd/ingest/decap"
)

// Decode a VXLAN-encapsulated TCP segment down to its innermost header.
func ExampleDecoder_Decode() {
	frame, _ := hex.DecodeString(strings.ReplaceAll(""+
		"020000000002020000000001 0800"+ // Ethernet
		"4500005e0000000040110000 0a000001 0a000002"+ // IPv4, UDP
		"80e812b5004a0000"+ // UDP 33000 > 4789
		"0800000000002a00"+ // VXLAN, VNI 42
		"020000000002020000000001 0800"+ // inner Ethernet
		"4500002c0000000040060000 c000020a c6336414"+ // IPv4 192.0.2.10 > 198.51.100.20, TCP
		"9c4001bb000003e8000007d05018020000000000"+ // TCP 40000 > 443, PSH ACK
		"16030100", " ", ""))
	dec := decap.NewDecoder(decap.Config{})
	var p decap.Packet
	if err := dec.Decode(frame, layers.LinkTypeEthernet, &p); err != nil {
		if errors.Is(err, decap.ErrNotTransport) {
			return // not TCP or UDP: skip, not malformed
		}
		fmt.Println(decap.OutcomeOf(err), err)
		return
	}
	fmt.Printf("%v:%d > %v:%d proto %d flags %#x seq %d payload %x vxlan %v\n",
		p.Src, p.SrcPort, p.Dst, p.DstPort, p.Proto, p.TCPFlags, p.Seq, p.Payload, p.Encap&decap.EncapVXLAN != 0)
	fmt.Println(dec.Stats().Packets[decap.OutcomeOK], "ok")
	// Output:
	// 192.0.2.10:40000 > 198.51.100.20:443 proto 6 flags 0x18 seq 1000 payload 16030100 vxlan true
	// 1 ok
}

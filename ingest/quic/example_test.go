package quic_test

import (
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"github.com/guardd/guardd/characteristics/tlsfp"
	"github.com/guardd/guardd/ingest/quic"
)

// A sniffer keeps one Flow per client UDP 5-tuple (the side whose first
// datagram LooksLikeInitial) and hands it every datagram that side sends.
func ExampleFlow() {
	text, _ := os.ReadFile("testdata/rfc9001-a2-client-initial.hex")
	datagram, _ := hex.DecodeString(strings.Join(strings.Fields(string(text)), ""))
	if !quic.LooksLikeInitial(datagram) {
		return
	}
	var f quic.Flow
	if hello, ok := f.Handle(datagram); ok {
		var ch tlsfp.ClientHello
		if tlsfp.ParseClientHello(hello, &ch) == nil {
			fp := tlsfp.Compute(&ch, 'q', tlsfp.Options{})
			fmt.Println(fp.SNI, fp.JA4)
		}
	}
	fmt.Println("done:", f.Done())
	// Output:
	// example.com q13d0211an_62ed6f6ca7ad_4d634acda6c0
	// done: true
}

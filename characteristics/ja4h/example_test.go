package ja4h_test

import (
	"fmt"

	"github.com/guardd/guardd/characteristics/ja4h"
)

// A sniffer keeps one Parser per TCP flow that starts with a request line and
// feeds it the client's bytes. After CONNECT the tunnel's bytes go to TLS
// detection.
func ExampleParser() {
	stream := []byte("GET /a HTTP/1.1\r\nHost: x\r\nCookie: s=1\r\n\r\n" +
		"CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n" +
		"\x16\x03\x01\x02\x00\x01")
	if ok, _ := ja4h.Classify(stream); !ok {
		return
	}
	var p ja4h.Parser
	rest, done := p.Feed(stream, func(r *ja4h.Request) {
		fp, _ := ja4h.Fingerprint(r)
		fmt.Printf("%s %s %s\n", r.Method, r.Target, fp)
	})
	fmt.Printf("done=%v tunnel starts % x\n", done, rest[:3])
	// Output:
	// GET /a ge11cn010000_4a823118b9ba_043a718774c5_f1c25984f5cc
	// CONNECT example.test:443 co11nn010000_4a823118b9ba_000000000000_000000000000
	// done=true tunnel starts 16 03 01
}

package tlsfp_test

import (
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/guardd/guardd/characteristics/tlsfp"
)

// clientFlight returns the first bytes a crypto/tls client writes.
func clientFlight() []byte {
	c, s := net.Pipe()
	go func() {
		cli := tls.Client(c, &tls.Config{ServerName: "shop.example.test", NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS13})
		_ = cli.SetDeadline(time.Now().Add(time.Second))
		_ = cli.Handshake()
	}()
	buf := make([]byte, 4096)
	n, _ := s.Read(buf)
	s.Close()
	return buf[:n]
}

// A sniffer keeps one Scanner per TCP flow (client to server) and feeds it
// the reassembled bytes as they arrive.
func ExampleScanner() {
	stream := clientFlight()
	if !tlsfp.LooksLikeClientHelloRecord(stream) {
		return // or try SSLv2, CONNECT, SOCKSPreamble, FindHello
	}
	var s tlsfp.Scanner
	for len(stream) > 0 && !s.Done() {
		seg := stream[:min(100, len(stream))] // segments of any size
		stream = stream[len(seg):]
		s.Feed(seg, func(hello []byte) {
			ch := s.Parsed() // already parsed; tlsfp.ParseHello(hello, ch) is equivalent
			fp := tlsfp.Compute(ch, 't', tlsfp.Options{})
			fmt.Println(s.Hellos(), fp.SNI, fp.JA4[:4], fp.JA4[8:10])
		})
	}
	// Output: 1 shop.example.test t13d h2
}

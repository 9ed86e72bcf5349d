package ja4h

import "testing"

// typical is a browser-like GET with cookies.
const typical = "GET /products/42?ref=home HTTP/1.1\r\nHost: shop.example.test\r\n" +
	"User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Safari/537.36\r\n" +
	"Accept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\nAccept-Language: en-US,en;q=0.9\r\n" +
	"Accept-Encoding: gzip, deflate, br\r\nReferer: https://shop.example.test/\r\nConnection: keep-alive\r\n" +
	"Cookie: session=0123456789abcdef; theme=dark; _ga=GA1.2.3.4\r\nUpgrade-Insecure-Requests: 1\r\n" +
	"Sec-Fetch-Dest: document\r\nSec-Fetch-Mode: navigate\r\n\r\n"

func BenchmarkParserFeed(b *testing.B) {
	req := []byte(typical)
	var p Parser
	n := 0
	emit := func(*Request) { n++ }
	b.ReportAllocs()
	b.SetBytes(int64(len(req)))
	for b.Loop() {
		p.Feed(req, emit)
	}
	if n == 0 {
		b.Fatal("no request")
	}
}

func BenchmarkParserFeedAndFingerprint(b *testing.B) {
	req := []byte(typical)
	var p Parser
	emit := func(r *Request) { _, _ = Fingerprint(r) }
	b.ReportAllocs()
	b.SetBytes(int64(len(req)))
	for b.Loop() {
		p.Feed(req, emit)
	}
}

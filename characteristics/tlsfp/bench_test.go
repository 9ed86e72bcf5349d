package tlsfp

import (
	"slices"
	"testing"
)

// chromeLike is a Chrome-shaped hello: JA4.md's cipher and extension lists
// with GREASE, an ML-KEM-sized key share and padding.
func chromeLike(t testing.TB) []byte {
	ciphers := append([]uint16{0x4a4a}, worked...)
	exts := append([]ext{empty(0x3a3a)}, workedExts(sigalgsExt(workedSig...))...)
	exts[3] = ext{0x0033, make([]byte, 1250)} // key_share with X25519MLKEM768
	exts = append(exts, empty(0xfe0d), empty(0x1a1a), ext{0x0015, make([]byte, 200)})
	return helloSpec{version: 0x0303, ciphers: ciphers, exts: exts}.build(t)
}

func BenchmarkParseAndCompute(b *testing.B) {
	msg := chromeLike(b)
	var ch ClientHello
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if err := ParseClientHello(msg, &ch); err != nil {
			b.Fatal(err)
		}
		_ = Compute(&ch, 't', Options{})
	}
}

func BenchmarkParseClientHello(b *testing.B) {
	msg := chromeLike(b)
	var ch ClientHello
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if err := ParseClientHello(msg, &ch); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkScannerFeed(b *testing.B) {
	msg := chromeLike(b)
	// Two records, cut in three segments, as a browser's first flight.
	stream := slices.Concat(record(recHandshake, msg[:1000]), record(recHandshake, msg[1000:]))
	var s Scanner
	n := 0
	emit := func([]byte) { n++ }
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		s.Reset()
		s.Feed(stream[:700], emit)
		s.Feed(stream[700:1400], emit)
		s.Feed(stream[1400:], emit)
	}
	if n == 0 {
		b.Fatal("no hello")
	}
}

func BenchmarkParseAndAppendText(b *testing.B) {
	msg := chromeLike(b)
	var ch ClientHello
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if err := ParseClientHello(msg, &ch); err != nil {
			b.Fatal(err)
		}
		buf, _ = AppendText(buf[:0], &ch, 't', Options{})
	}
}

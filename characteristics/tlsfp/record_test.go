package tlsfp

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"slices"
	"testing"
	"time"
)

// collect feeds the chunks to a fresh Scanner and returns copies of the
// emitted hellos.
func collect(chunks ...[]byte) ([][]byte, bool) {
	var s Scanner
	var out [][]byte
	for _, c := range chunks {
		s.Feed(c, func(h []byte) { out = append(out, clone(h)) })
	}
	return out, s.Done()
}

func split(b []byte, at ...int) [][]byte {
	var out [][]byte
	prev := 0
	for _, a := range at {
		out = append(out, b[prev:a])
		prev = a
	}
	return append(out, b[prev:])
}

func bytewise(b []byte) [][]byte {
	out := make([][]byte, len(b))
	for i := range b {
		out[i] = b[i : i+1]
	}
	return out
}

func TestScanner(t *testing.T) {
	ch1 := helloCases()[0].hello(t)
	ch2 := helloCases()[5].hello(t)
	ccs := record(recChangeCipher, []byte{1})
	alert := record(recAlert, []byte{2, 40})
	cke := []byte{16, 0, 0, 2, 1, 0} // ClientKeyExchange
	appdata := record(recApplication, []byte("x"))

	// One hello over three records.
	multi := slices.Concat(record(recHandshake, ch1[:10]), record(recHandshake, ch1[10:200]), record(recHandshake, ch1[200:]))

	tests := []struct {
		name     string
		stream   []byte
		want     [][]byte
		wantDone bool
	}{
		{"one record", record(recHandshake, ch1), [][]byte{ch1}, false},
		{"hello over several records", multi, [][]byte{ch1}, false},
		{"two messages in one record", record(recHandshake, slices.Concat(ch1, ch2)), [][]byte{ch1, ch2}, false},
		{"hrr: ccs then second hello", slices.Concat(record(recHandshake, ch1), ccs, record(recHandshake, ch2)), [][]byte{ch1, ch2}, false},
		{"alert stops", slices.Concat(record(recHandshake, ch1), alert, record(recHandshake, ch2)), [][]byte{ch1}, true},
		{"appdata stops", slices.Concat(appdata, record(recHandshake, ch1)), nil, true},
		{"non-hello message stops", slices.Concat(record(recHandshake, ch1), record(recHandshake, cke), record(recHandshake, ch2)), [][]byte{ch1}, true},
		{"bad hello stops", slices.Concat(record(recHandshake, []byte{1, 0, 0, 1, 0}), record(recHandshake, ch1)), nil, true},
		{"oversized record stops", []byte{22, 3, 1, 0x48, 0x01, 1}, nil, true},
		{"not tls", []byte("GET / HTTP/1.1\r\n\r\n"), nil, true},
		{"incomplete hello emits nothing", record(recHandshake, ch1)[:100], nil, false},
		{"four hellos then stop", slices.Concat(record(recHandshake, slices.Concat(ch1, ch1, ch1, ch1, ch1))), [][]byte{ch1, ch1, ch1, ch1}, true},
		{"sslv2 compatible", sslv2Hello(), [][]byte{sslv2Hello()}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shapes := map[string][][]byte{
				"one shot":                 {tt.stream},
				"byte at a time":           bytewise(tt.stream),
				"header cut after 3 bytes": split(tt.stream, min(3, len(tt.stream))),
			}
			for shape, chunks := range shapes {
				got, done := collect(chunks...)
				if !equalHellos(got, tt.want) {
					t.Errorf("%s: emitted %d hellos %s, want %d", shape, len(got), lens(got), len(tt.want))
				}
				if done != tt.wantDone {
					t.Errorf("%s: done = %v, want %v", shape, done, tt.wantDone)
				}
			}
		})
	}
}

func equalHellos(a, b [][]byte) bool {
	return slices.EqualFunc(a, b, func(x, y []byte) bool { return bytes.Equal(x, y) })
}

func lens(hs [][]byte) string {
	var out []int
	for _, h := range hs {
		out = append(out, len(h))
	}
	return fmt.Sprint(out)
}

func TestScannerStopsAt64KiB(t *testing.T) {
	// Endless CCS records never make progress; the scanner gives up.
	var s Scanner
	ccs := record(recChangeCipher, make([]byte, 1000))
	for range 100 {
		s.Feed(ccs, func([]byte) { t.Fatal("emitted") })
	}
	if !s.Done() {
		t.Error("not done after 100 KB of CCS")
	}
}

func TestScannerReset(t *testing.T) {
	ch1 := helloCases()[0].hello(t)
	var s Scanner
	s.Feed(record(recAlert, []byte{2, 0}), func([]byte) {})
	if !s.Done() {
		t.Fatal("alert did not stop")
	}
	s.Reset()
	n := 0
	s.Feed(record(recHandshake, ch1), func([]byte) { n++ })
	if n != 1 || s.Done() || s.Hellos() != 1 {
		t.Errorf("after Reset: %d hellos, done %v", n, s.Done())
	}
	if s.Parsed().SNI != "example.test" {
		t.Errorf("Parsed().SNI = %q", s.Parsed().SNI)
	}
}

func TestScannerNoAllocs(t *testing.T) {
	stream := slices.Concat(record(recHandshake, helloCases()[0].hello(t)), record(recChangeCipher, []byte{1}))
	var s Scanner
	emit := func([]byte) {}
	s.Feed(stream, emit)
	allocs := testing.AllocsPerRun(100, func() {
		s.Reset()
		s.Feed(stream[:7], emit)
		s.Feed(stream[7:], emit)
	})
	if allocs != 0 {
		t.Errorf("Scanner.Feed allocates %.1f times per stream, want 0", allocs)
	}
}

func TestLooksLikeClientHelloRecord(t *testing.T) {
	tests := []struct {
		b    []byte
		want bool
	}{
		{[]byte{22, 3, 1, 0, 200, 1}, true},
		{[]byte{22, 3, 0, 0x48, 0x00, 1}, true},
		{[]byte{22, 3, 4, 0, 200, 1}, true},
		{[]byte{22, 3, 5, 0, 200, 1}, false},
		{[]byte{22, 2, 1, 0, 200, 1}, false},
		{[]byte{22, 3, 1, 0x48, 0x01, 1}, false},
		{[]byte{22, 3, 1, 0, 200, 2}, false},
		{[]byte{23, 3, 1, 0, 200, 1}, false},
		{[]byte{22, 3, 1, 0, 200}, false},
	}
	for _, tt := range tests {
		if got := LooksLikeClientHelloRecord(tt.b); got != tt.want {
			t.Errorf("LooksLikeClientHelloRecord(% x) = %v", tt.b, got)
		}
	}
	if !LooksLikeSSLv2Hello(sslv2Hello()) || LooksLikeSSLv2Hello(record(22, []byte{1, 0, 0, 0})) {
		t.Error("LooksLikeSSLv2Hello")
	}
}

func TestFindHello(t *testing.T) {
	hello := record(recHandshake, helloCases()[0].hello(t))
	starttls := []byte("EHLO x\r\n250 ok\r\nSTARTTLS\r\n")
	tests := []struct {
		name string
		b    []byte
		want int
	}{
		{"at zero", hello, 0},
		{"after smtp starttls", slices.Concat(starttls, hello), len(starttls)},
		{"decoy record header first", slices.Concat([]byte{22, 3, 1, 0, 9, 1, 0, 0}, hello), 8},
		{"truncated hello", slices.Concat(starttls, hello[:len(hello)-1]), -1},
		{"nothing", []byte("hello world"), -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FindHello(tt.b); got != tt.want {
				t.Errorf("FindHello = %d, want %d", got, tt.want)
			}
		})
	}
}

// recordingConn keeps a copy of everything written.
type recordingConn struct {
	net.Conn
	buf bytes.Buffer
}

func (c *recordingConn) Write(p []byte) (int, error) {
	c.buf.Write(p)
	return c.Conn.Write(p)
}

// TestGoCryptoTLSHello fingerprints a real hello written by crypto/tls and
// checks it against what crypto/tls's own server parsed from the same bytes.
func TestGoCryptoTLSHello(t *testing.T) {
	cliEnd, srvEnd := net.Pipe()
	rec := &recordingConn{Conn: cliEnd}
	infoc := make(chan *tls.ClientHelloInfo, 1)
	srv := tls.Server(srvEnd, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		infoc <- h
		return nil, fmt.Errorf("stop after the hello")
	}})
	go func() { _ = srv.Handshake(); srvEnd.Close() }()
	cli := tls.Client(rec, &tls.Config{ServerName: "example.test", NextProtos: []string{"h2", "http/1.1"}, InsecureSkipVerify: true})
	_ = cli.SetDeadline(time.Now().Add(5 * time.Second))
	_ = cli.Handshake() // fails: the server stops after reading the hello
	cli.Close()
	var info *tls.ClientHelloInfo
	select {
	case info = <-infoc:
	case <-time.After(5 * time.Second):
		t.Fatal("server saw no hello")
	}
	_, _ = io.Copy(io.Discard, srvEnd)

	var hellos [][]byte
	var s Scanner
	stream := rec.buf.Bytes()
	if !LooksLikeClientHelloRecord(stream) {
		t.Fatalf("stream does not start with a hello record: % x", stream[:6])
	}
	s.Feed(stream, func(h []byte) { hellos = append(hellos, clone(h)) })
	if len(hellos) != 1 {
		t.Fatalf("%d hellos", len(hellos))
	}
	var ch ClientHello
	if err := ParseClientHello(hellos[0], &ch); err != nil {
		t.Fatal(err)
	}
	if ch.SNI != info.ServerName || string(ch.ALPN) != info.SupportedProtos[0] ||
		!slices.Equal(ch.Ciphers, info.CipherSuites) || !slices.Equal(ch.Extensions, info.Extensions) ||
		!slices.Equal(ch.SupportedVersions, info.SupportedVersions) || !slices.Equal(ch.PointFormats, info.SupportedPoints) {
		t.Errorf("parse differs from crypto/tls:\n ours %+v\n tls  %+v", ch, info)
	}
	groups := make([]uint16, len(info.SupportedCurves))
	for i, c := range info.SupportedCurves {
		groups[i] = uint16(c)
	}
	sigs := make([]uint16, len(info.SignatureSchemes))
	for i, s := range info.SignatureSchemes {
		sigs[i] = uint16(s)
	}
	if !slices.Equal(ch.Groups, groups) || !slices.Equal(ch.SigAlgs, sigs) {
		t.Errorf("groups/sigalgs differ: %v %v vs %v %v", ch.Groups, ch.SigAlgs, groups, sigs)
	}

	// Hand-derived part a: TLS 1.3 over TCP, SNI, Go sends no GREASE.
	fp := Compute(&ch, 't', Options{})
	wantA := fmt.Sprintf("t13d%02d%02dh2", min(len(info.CipherSuites), 99), min(len(info.Extensions), 99))
	if fp.JA4[:10] != wantA {
		t.Errorf("ja4 a = %s, want %s", fp.JA4[:10], wantA)
	}
	if fp.SNI != "example.test" {
		t.Errorf("sni = %q", fp.SNI)
	}
	// Part b from the suites crypto/tls reported, sorted by hand.
	sorted := slices.Clone(info.CipherSuites)
	slices.Sort(sorted)
	if want := string(hash12s(appendHex4List(nil, sorted))); fp.JA4[11:23] != want {
		t.Errorf("ja4 b = %s, want %s", fp.JA4[11:23], want)
	}
	t.Logf("crypto/tls hello: %s %s", fp.JA4, fp.JA3Hash)
}

package tlsfp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"slices"
	"testing"
	"time"
)

func selfSigned(t *testing.T) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "example.test"},
		DNSNames: []string{"example.test"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// clientStream runs a real crypto/tls handshake over loopback TCP and returns
// every byte the client wrote.
func clientStream(t *testing.T, srvConf *tls.Config, cliConf *tls.Config) []byte {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback TCP: %v", err)
	}
	defer ln.Close()
	cliEnd, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srvEnd, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingConn{Conn: cliEnd}
	srv := tls.Server(srvEnd, srvConf)
	errc := make(chan error, 1)
	go func() { errc <- srv.Handshake() }()
	cli := tls.Client(rec, cliConf)
	_ = cli.SetDeadline(time.Now().Add(10 * time.Second))
	if err := cli.Handshake(); err != nil {
		t.Fatalf("client handshake: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("server handshake: %v", err)
	}
	_, _ = cli.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	cli.Close()
	srv.Close()
	return rec.buf.Bytes()
}

// TestTLS12Stream: after a TLS 1.2 hello the client sends ClientKeyExchange,
// CCS and an encrypted Finished (a type-22 record): one hello, then stop at
// the first message that is not a ClientHello.
func TestTLS12Stream(t *testing.T) {
	stream := clientStream(t, &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}, MaxVersion: tls.VersionTLS12},
		&tls.Config{ServerName: "example.test", InsecureSkipVerify: true})
	got, done := collect(bytewise(stream)...)
	if len(got) != 1 || !done {
		t.Fatalf("%d hellos, done %v; want 1, true", len(got), done)
	}
	one, _ := collect(stream)
	if !equalHellos(one, got) {
		t.Error("one-shot and byte-at-a-time differ")
	}
}

// TestHelloRetryRequestStream records the client side of a real crypto/tls
// handshake in which the server forces a HelloRetryRequest (it accepts only
// P-384, the client's first key shares are X25519MLKEM768 and X25519). The
// stream holds CH1, a CCS, CH2, then encrypted records: the scanner emits two
// hellos and stops.
func TestHelloRetryRequestStream(t *testing.T) {
	// Loopback TCP, not net.Pipe: the server's session tickets must not
	// block on a client that is still writing its Finished.
	stream := clientStream(t, &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}, CurvePreferences: []tls.CurveID{tls.CurveP384}},
		&tls.Config{ServerName: "example.test", InsecureSkipVerify: true})
	for name, chunks := range map[string][][]byte{"one shot": {stream}, "byte at a time": bytewise(stream)} {
		var s Scanner
		var idx []int
		var groups [][]uint16
		for _, c := range chunks {
			s.Feed(c, func(h []byte) {
				idx = append(idx, s.Hellos())
				var ch ClientHello
				if err := ParseClientHello(h, &ch); err != nil {
					t.Fatal(err)
				}
				if ch.SNI != "example.test" {
					t.Errorf("%s: hello %d SNI %q", name, s.Hellos(), ch.SNI)
				}
				groups = append(groups, append([]uint16(nil), ch.Groups...))
			})
		}
		if len(idx) != 2 || idx[0] != 1 || idx[1] != 2 {
			t.Fatalf("%s: hello indexes %v, want [1 2]", name, idx)
		}
		if !s.Done() {
			t.Errorf("%s: scanner not done after the encrypted records", name)
		}
		if !slices.Contains(groups[1], uint16(tls.CurveP384)) {
			t.Errorf("%s: second hello groups %v lack P-384", name, groups[1])
		}
	}
}

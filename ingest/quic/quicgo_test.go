package quic

import (
	"context"
	"crypto/tls"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"

	"github.com/guardd/guardd/characteristics/tlsfp"
)

// captureClientInitials runs a quic-go client against a UDP socket on
// 127.0.0.1 that only records what it receives (there is no server, so the
// client sends its first flight and retransmits it) and returns the
// datagrams.
func captureClientInitials(t *testing.T, version quicgo.Version, sni string) [][]byte {
	t.Helper()
	sink, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Skipf("no UDP on loopback: %v", err)
	}
	var (
		mu      sync.Mutex
		dgrams  [][]byte
		stopped = make(chan struct{})
	)
	go func() {
		defer close(stopped)
		buf := make([]byte, 65536)
		for {
			n, _, err := sink.ReadFrom(buf)
			if err != nil {
				return
			}
			mu.Lock()
			dgrams = append(dgrams, slices.Clone(buf[:n]))
			mu.Unlock()
		}
	}()
	cli, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	tlsConf := &tls.Config{
		ServerName: sni,
		NextProtos: []string{"h3"},
		// A post-quantum key share makes the hello span several Initials.
		CurvePreferences: []tls.CurveID{tls.X25519MLKEM768, tls.X25519},
	}
	conn, err := quicgo.Dial(ctx, cli, sink.LocalAddr(), tlsConf, &quicgo.Config{Versions: []quicgo.Version{version}})
	if err == nil {
		conn.CloseWithError(0, "")
		t.Fatal("handshake succeeded against a sink")
	}
	cli.Close()
	sink.Close()
	<-stopped
	mu.Lock()
	defer mu.Unlock()
	if len(dgrams) == 0 {
		t.Fatal("no datagram captured")
	}
	return dgrams
}

func TestQuicGoInitials(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a quic-go client for ~1 s")
	}
	for _, tc := range []struct {
		name    string
		version quicgo.Version
		want    uint32
	}{
		{"v1", quicgo.Version1, Version1},
		{"v2", quicgo.Version2, Version2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sni := "quic-" + tc.name + ".example.test"
			dgrams := captureClientInitials(t, tc.version, sni)
			if !LooksLikeInitial(dgrams[0]) {
				t.Fatalf("first datagram is not an Initial: % x", dgrams[0][:8])
			}
			var f Flow
			var hello []byte
			hellos := 0
			for _, d := range dgrams {
				if h, ok := f.Handle(d); ok {
					hellos++
					hello = slices.Clone(h)
				}
			}
			if hellos != 1 {
				t.Fatalf("%d hellos from %d datagrams, want 1", hellos, len(dgrams))
			}
			if f.version != tc.want {
				t.Errorf("flow version %#x, want %#x", f.version, tc.want)
			}
			if len(hello) < 1200 {
				t.Errorf("hello of %d bytes: expected a post-quantum hello spanning Initials", len(hello))
			}
			var ch tlsfp.ClientHello
			if err := tlsfp.ParseClientHello(hello, &ch); err != nil {
				t.Fatal(err)
			}
			fp := tlsfp.Compute(&ch, 'q', tlsfp.Options{})
			if fp.SNI != sni {
				t.Errorf("sni = %q, want %q", fp.SNI, sni)
			}
			if fp.JA4[:4] != "q13d" || fp.JA4[8:10] != "h3" {
				t.Errorf("ja4 = %s", fp.JA4)
			}
			if !slices.Contains(ch.Extensions, 0x0039) {
				t.Error("no quic_transport_parameters extension")
			}
			t.Logf("%d datagrams, hello %d bytes, %s", len(dgrams), len(hello), fp.JA4)

			// Byte-identical result when the datagrams come in another
			// order (the second flight before the first).
			var g Flow
			var again []byte
			for _, i := range reorder(len(dgrams)) {
				if h, ok := g.Handle(dgrams[i]); ok {
					again = h
				}
			}
			if !slices.Equal(again, hello) {
				t.Error("reordered datagrams give another hello")
			}
		})
	}
}

// reorder swaps the first two datagrams.
func reorder(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	if n > 1 {
		idx[0], idx[1] = idx[1], idx[0]
	}
	return idx
}

package quic

import (
	"bytes"
	"testing"
)

// FuzzFlow feeds a raw datagram, then two Initials whose frames are the
// fuzzer's bytes sealed under real keys (so frame parsing and reassembly are
// reached past the AEAD).
func FuzzFlow(f *testing.F) {
	hello := testHello(1300)
	f.Add(readHexFile(f, "rfc9001-a2-client-initial.hex"), cryptoFrame(0, hello[:700]), cryptoFrame(700, hello[700:]))
	f.Add(readHexFile(f, "rfc9369-a2-client-initial.hex"), []byte{0x02, 0x01, 0x00, 0x01, 0x00, 0x06, 0x00, 0x04, 1, 0, 0, 0}, []byte{0x1c})
	f.Add([]byte{0xc0, 0, 0, 0, 1, 20}, cryptoFrame(5, []byte("abc")), cryptoFrame(0, []byte{1, 0, 0, 4, 9}))
	f.Fuzz(func(t *testing.T, raw, frames1, frames2 []byte) {
		if len(raw) > 1<<16 || len(frames1) > 1<<14 || len(frames2) > 1<<14 {
			return
		}
		check := func(h []byte) {
			if len(h) < 4 || h[0] != 1 || len(h) != 4+(int(h[1])<<16|int(h[2])<<8|int(h[3])) {
				t.Fatalf("bad hello % x", h[:min(len(h), 8)])
			}
		}
		var fl Flow
		if h, ok := fl.Handle(raw); ok {
			check(h)
		}
		_ = LooksLikeInitial(raw)

		b := &builder{t: t, version: Version1, dcid: []byte{1, 2, 3, 4, 5, 6, 7, 8}}
		d1, d2 := b.initial(frames1), b.initial(frames2)
		var g Flow
		n := 0
		var first []byte
		for _, d := range [][]byte{d1, d2, d1, d2} {
			if h, ok := g.Handle(d); ok {
				check(h)
				n++
				first = bytes.Clone(h)
			}
		}
		if n > 1 {
			t.Fatalf("%d hellos from one flow", n)
		}
		// Invariant: the two Initials coalesced in one datagram give what
		// the separate datagrams gave (retransmissions add nothing).
		var c Flow
		h, ok := c.Handle(append(append([]byte(nil), d1...), d2...))
		if ok != (n == 1) || !bytes.Equal(h, first) {
			t.Fatalf("coalesced (%v) and separate (%d) datagrams disagree", ok, n)
		}
	})
}

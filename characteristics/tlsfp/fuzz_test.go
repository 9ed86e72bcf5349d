package tlsfp

import (
	"bytes"
	"slices"
	"testing"
)

const maxFuzzLen = 1 << 16

func FuzzParseClientHello(f *testing.F) {
	for _, tc := range helloCases() {
		f.Add(tc.hello(f))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > maxFuzzLen {
			return
		}
		var ch ClientHello
		if ParseHello(b, &ch) != nil {
			return
		}
		fp := Compute(&ch, 't', Options{})
		if len(fp.JA4) < 36 || fp.JA4[:10] != fp.JA4R[:10] || fp.JA4[:10] != fp.JA4RO[:10] {
			t.Fatalf("bad ja4 %+v", fp)
		}
		// A parsed hello re-parses to the same fields (no state leaks
		// between parses into one ClientHello).
		var again ClientHello
		again.Ciphers = append(again.Ciphers, 1, 2, 3)
		if err := ParseHello(b, &again); err != nil {
			t.Fatalf("second parse failed: %v", err)
		}
		if fp2 := Compute(&again, 't', Options{}); fp2 != fp {
			t.Fatalf("reparse differs: %+v vs %+v", fp, fp2)
		}
	})
}

func FuzzScanner(f *testing.F) {
	ch1 := helloCases()[0].hello(f)
	f.Add(record(recHandshake, ch1), uint16(3))
	f.Add(slices.Concat(record(recHandshake, ch1), record(recChangeCipher, []byte{1}), record(recHandshake, ch1)), uint16(100))
	f.Add(sslv2Hello(), uint16(1))
	f.Fuzz(func(t *testing.T, b []byte, cut uint16) {
		if len(b) > maxFuzzLen {
			return
		}
		// Invariant: one-shot, split, and byte-at-a-time feeding agree.
		one, doneOne := collect(b)
		c := int(cut) % (len(b) + 1)
		two, doneTwo := collect(b[:c], b[c:])
		each, doneEach := collect(bytewise(b)...)
		if !equalHellos(one, two) || !equalHellos(one, each) || doneOne != doneTwo || doneOne != doneEach {
			t.Fatalf("feeding shapes disagree: %d/%d/%d hellos", len(one), len(two), len(each))
		}
		for _, h := range one {
			var ch ClientHello
			if ParseHello(h, &ch) != nil {
				t.Fatalf("emitted hello does not parse: %x", h)
			}
		}
		if n, _ := SOCKSPreamble(b); n > len(b) {
			t.Fatalf("SOCKSPreamble = %d past %d bytes", n, len(b))
		}
		if i := FindHello(b); i >= 0 && !bytes.Equal(b[i:i+1], []byte{recHandshake}) {
			t.Fatalf("FindHello offset %d not at a record", i)
		}
	})
}

package quic

import "testing"

// twoInitials is a 1800-byte hello over two Initials, as quic-go and Chrome
// send an X25519MLKEM768 hello.
func twoInitials(b testing.TB) (d1, d2 []byte) {
	hello := testHello(1800)
	bl := &builder{t: b, version: Version1, dcid: []byte{1, 2, 3, 4, 5, 6, 7, 8}}
	return bl.initial(cryptoFrame(0, hello[:1100])), bl.initial(cryptoFrame(1100, hello[1100:]))
}

// BenchmarkFlowHandle is a whole flow: key derivation from the first
// Initial's DCID, two Initials opened, the hello reassembled.
func BenchmarkFlowHandle(b *testing.B) {
	d1, d2 := twoInitials(b)
	var f Flow
	b.ReportAllocs()
	b.SetBytes(int64(len(d1) + len(d2)))
	for b.Loop() {
		f.Reset()
		f.Handle(d1)
		if _, ok := f.Handle(d2); !ok {
			b.Fatal("no hello")
		}
	}
}

// BenchmarkFlowHandleKeyed is the same with the keys already derived: the
// per-packet cost (header protection, AEAD, frames, reassembly).
func BenchmarkFlowHandleKeyed(b *testing.B) {
	d1, d2 := twoInitials(b)
	var f Flow
	f.Handle(d1)
	f.Handle(d2)
	keys := f.keys
	b.ReportAllocs()
	b.SetBytes(int64(len(d1) + len(d2)))
	for b.Loop() {
		f.Reset()
		f.keys, f.haveKeys, f.version = keys, true, Version1
		f.odcidLen = copy(f.odcid[:], []byte{1, 2, 3, 4, 5, 6, 7, 8})
		f.Handle(d1)
		if _, ok := f.Handle(d2); !ok {
			b.Fatal("no hello")
		}
	}
}

func BenchmarkInitialKeys(b *testing.B) {
	dcid := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := InitialKeys(Version1, dcid); err != nil {
			b.Fatal(err)
		}
	}
}

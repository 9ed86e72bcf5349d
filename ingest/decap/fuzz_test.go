package decap

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/gopacket/gopacket/layers"
)

var fuzzLinkTypes = []layers.LinkType{
	layers.LinkTypeEthernet, layers.LinkTypeLinuxSLL, layers.LinkTypeLinuxSLL2, layers.LinkTypeNull,
	layers.LinkTypeLoop, layers.LinkTypeRaw, layers.LinkTypeIPv4, layers.LinkTypeIPv6,
}

// within reports whether sub lies inside b.
func within(sub, b []byte) bool {
	if len(sub) == 0 {
		return true
	}
	if len(b) == 0 {
		return false
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	s := uintptr(unsafe.Pointer(unsafe.SliceData(sub)))
	return s >= lo && s+uintptr(len(sub)) <= lo+uintptr(len(b))
}

// FuzzDecode feeds arbitrary frames of every link type through one decoder
// with reassembly on: no panic, an outcome from the closed set, and a payload
// inside the frame (or inside the reassembly buffer).
func FuzzDecode(f *testing.F) {
	for _, c := range decodeCases() {
		for i, lt := range fuzzLinkTypes {
			if lt == c.lt {
				f.Add(uint8(i), c.build(f))
			}
		}
	}
	d := NewDecoder(Config{Defragment: true, MaxFragmentDatagrams: 4})
	f.Fuzz(func(t *testing.T, lti uint8, frame []byte) {
		if len(frame) > 1<<16 {
			return
		}
		lt := fuzzLinkTypes[int(lti)%len(fuzzLinkTypes)]
		var p Packet
		err := d.Decode(frame, lt, &p)
		o := OutcomeOf(err)
		if o >= NumOutcomes {
			t.Fatalf("outcome %d out of the closed set", o)
		}
		var de *DecodeError
		if err != nil && !errors.Is(err, ErrNotTransport) && !errors.As(err, &de) {
			t.Fatalf("unexpected error type %T: %v", err, err)
		}
		if err != nil {
			if p.Payload != nil {
				t.Fatal("payload on error")
			}
			return
		}
		if p.Proto != 6 && p.Proto != 17 {
			t.Fatalf("ok with proto %d", p.Proto)
		}
		if !p.Src.IsValid() || !p.Dst.IsValid() {
			t.Fatal("ok without addresses")
		}
		if p.Encap&EncapDefrag == 0 && !within(p.Payload, frame) {
			t.Fatal("payload outside the frame")
		}
		if p.Encap&EncapDefrag != 0 && len(p.Payload) > maxDatagram {
			t.Fatal("reassembled payload too long")
		}
	})
}

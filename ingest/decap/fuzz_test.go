package decap

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
	"unsafe"

	"github.com/gopacket/gopacket"
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
// with reassembly on: no panic, an outcome from the closed set, a payload
// inside the frame (or inside the reassembly buffer), and for plain Ethernet
// frames the same addresses, ports and payload as gopacket's decoding.
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
		if lt == layers.LinkTypeEthernet {
			compareGopacket(t, frame, &p)
		}
	})
}

// compareGopacket checks a plain Ethernet/IP/TCP-or-UDP frame against
// gopacket's own decoding (the reference, off the hot path).
func compareGopacket(t *testing.T, frame []byte, p *Packet) {
	if p.Encap != 0 {
		return
	}
	for _, port := range []uint16{4789, 8472, 4790, 6081} {
		if p.SrcPort == port || p.DstPort == port {
			return // tunnel ports gopacket reads differently
		}
	}
	pkt := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.DecodeOptions{NoCopy: true})
	if pkt.ErrorLayer() != nil || pkt.Metadata().Truncated {
		return
	}
	var src, dst netip.Addr
	switch ip := pkt.NetworkLayer().(type) {
	case *layers.IPv4:
		if ip.Flags&layers.IPv4MoreFragments != 0 || ip.FragOffset != 0 {
			return
		}
		src, _ = netip.AddrFromSlice(ip.SrcIP)
		dst, _ = netip.AddrFromSlice(ip.DstIP)
	case *layers.IPv6:
		src, _ = netip.AddrFromSlice(ip.SrcIP)
		dst, _ = netip.AddrFromSlice(ip.DstIP)
	default:
		return
	}
	var sp, dp uint16
	var payload []byte
	switch tl := pkt.TransportLayer().(type) {
	case *layers.TCP:
		sp, dp, payload = uint16(tl.SrcPort), uint16(tl.DstPort), tl.Payload
	case *layers.UDP:
		sp, dp, payload = uint16(tl.SrcPort), uint16(tl.DstPort), tl.Payload
	default:
		return
	}
	if src != p.Src.Unmap() && src != p.Src || dst != p.Dst.Unmap() && dst != p.Dst || sp != p.SrcPort || dp != p.DstPort {
		t.Fatalf("ours %v:%d > %v:%d, gopacket %v:%d > %v:%d", p.Src, p.SrcPort, p.Dst, p.DstPort, src, sp, dst, dp)
	}
	if len(payload) > 0 && !bytes.Equal(payload, p.Payload) {
		t.Fatalf("payload: ours %x, gopacket %x", p.Payload, payload)
	}
}

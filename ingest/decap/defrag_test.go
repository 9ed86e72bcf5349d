package decap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// fragments splits a UDP datagram (header and data) into IP fragments of at
// most size bytes each (a multiple of 8), as Ethernet frames.
func fragments(t *testing.T, v6 bool, id uint32, udpBytes []byte, size int) [][]byte {
	t.Helper()
	var out [][]byte
	for off := 0; off < len(udpBytes); off += size {
		end := min(off+size, len(udpBytes))
		more := end < len(udpBytes)
		chunk := gopacket.Payload(udpBytes[off:end])
		if v6 {
			fh := make(raw, 8)
			fh[0] = 17
			fo := uint16(off/8) << 3
			if more {
				fo |= 1
			}
			binary.BigEndian.PutUint16(fh[2:], fo)
			binary.BigEndian.PutUint32(fh[4:], id)
			out = append(out, serialize(t, eth(layers.EthernetTypeIPv6), ip6(cli6, srv6, layers.IPProtocolIPv6Fragment), fh, chunk))
			continue
		}
		ip := ip4(cli4, srv4, layers.IPProtocolUDP)
		ip.Id, ip.FragOffset = uint16(id), uint16(off/8)
		if more {
			ip.Flags = layers.IPv4MoreFragments
		}
		out = append(out, serialize(t, eth(layers.EthernetTypeIPv4), ip, chunk))
	}
	return out
}

func udpDatagram(t *testing.T, n int) ([]byte, []byte) {
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i * 7)
	}
	u := serialize(t, udp(50000, 443), gopacket.Payload(data))
	return u, data
}

func TestDefragment(t *testing.T) {
	u, data := udpDatagram(t, 3000)
	for _, v6 := range []bool{false, true} {
		name := map[bool]string{false: "ipv4 ", true: "ipv6 "}[v6]
		frags := fragments(t, v6, 77, u, 1232)
		other := fragments(t, v6, 78, u, 1232)
		cases := []struct {
			name  string
			order [][]byte
		}{
			{"in order", frags},
			{"reversed", [][]byte{frags[2], frags[1], frags[0]}},
			{"duplicates and another datagram", [][]byte{frags[1], other[0], frags[1], frags[2], other[2], frags[0]}},
		}
		for _, c := range cases {
			t.Run(name+c.name, func(t *testing.T) {
				d := NewDecoder(Config{Defragment: true})
				var p Packet
				for i, f := range c.order {
					err := d.Decode(f, layers.LinkTypeEthernet, &p)
					if i < len(c.order)-1 {
						if err != ErrFragmentPending {
							t.Fatalf("fragment %d: %v, want pending", i, err)
						}
						continue
					}
					if err != nil {
						t.Fatalf("last fragment: %v", err)
					}
				}
				if !bytes.Equal(p.Payload, data) || p.DstPort != 443 || p.Encap&EncapDefrag == 0 {
					t.Errorf("reassembled %d bytes, port %d, encap %#x", len(p.Payload), p.DstPort, p.Encap)
				}
				if s := d.Stats(); s.Packets[OutcomeOK] != 1 || s.Packets[OutcomeFragmentPending] != uint64(len(c.order)-1) {
					t.Errorf("stats %+v", s)
				}
			})
		}
	}
}

// TestDefragmentOverlap keeps the first copy of overlapping bytes.
func TestDefragmentOverlap(t *testing.T) {
	u, data := udpDatagram(t, 40)
	frags := fragments(t, false, 5, u, 24)
	ip := ip4(cli4, srv4, layers.IPProtocolUDP)
	ip.Id, ip.FragOffset, ip.Flags = 5, 1, layers.IPv4MoreFragments // overlaps bytes 8..23 with other content
	evil := serialize(t, eth(layers.EthernetTypeIPv4), ip, gopacket.Payload(bytes.Repeat([]byte{0xee}, 16)))
	d := NewDecoder(Config{Defragment: true})
	var p Packet
	for _, f := range [][]byte{frags[0], evil, frags[1]} {
		_ = d.Decode(f, layers.LinkTypeEthernet, &p)
	}
	if !bytes.Equal(p.Payload, data) {
		t.Errorf("payload %x, want %x", p.Payload, data)
	}
}

func TestDefragmentBounded(t *testing.T) {
	u, _ := udpDatagram(t, 100)
	d := NewDecoder(Config{Defragment: true, MaxFragmentDatagrams: 2})
	var p Packet
	var firsts [][]byte
	for id := range uint32(3) {
		f := fragments(t, false, id, u, 64)
		firsts = append(firsts, f[1])
		if err := d.Decode(f[0], layers.LinkTypeEthernet, &p); err != ErrFragmentPending {
			t.Fatal(err)
		}
	}
	if got := d.Stats().FragmentsEvicted; got != 1 {
		t.Fatalf("evicted %d, want 1", got)
	}
	// Datagram 0 was evicted: its last fragment starts over; 2 completes.
	if err := d.Decode(firsts[0], layers.LinkTypeEthernet, &p); err != ErrFragmentPending {
		t.Errorf("evicted datagram: %v, want pending", err)
	}
	if err := d.Decode(firsts[2], layers.LinkTypeEthernet, &p); err != nil {
		t.Errorf("kept datagram: %v", err)
	}
	if n := len(d.defrag.table); n > 2 {
		t.Errorf("%d datagrams held, cap 2", n)
	}
}

func TestDefragmentMalformed(t *testing.T) {
	u, _ := udpDatagram(t, 100)
	frags := fragments(t, false, 1, u, 64)
	odd := serialize(t, eth(layers.EthernetTypeIPv4), &layers.IPv4{Version: 4, IHL: 5, Flags: layers.IPv4MoreFragments, Protocol: layers.IPProtocolUDP,
		SrcIP: cli4.AsSlice(), DstIP: srv4.AsSlice()}, gopacket.Payload(make([]byte, 13)))
	huge := serialize(t, eth(layers.EthernetTypeIPv4), &layers.IPv4{Version: 4, IHL: 5, FragOffset: 8191, Protocol: layers.IPProtocolUDP,
		SrcIP: cli4.AsSlice(), DstIP: srv4.AsSlice()}, gopacket.Payload(make([]byte, 64)))
	// a final fragment ending before data already held
	ip := ip4(cli4, srv4, layers.IPProtocolUDP)
	ip.Id, ip.FragOffset = 1, 1
	short := serialize(t, eth(layers.EthernetTypeIPv4), ip, gopacket.Payload(make([]byte, 8)))
	cases := []struct {
		name   string
		frames [][]byte
	}{
		{"non-final length not a multiple of 8", [][]byte{odd}},
		{"beyond 65535", [][]byte{huge}},
		{"final fragment before held data", [][]byte{frags[0], short}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := NewDecoder(Config{Defragment: true})
			var p Packet
			var err error
			for _, f := range c.frames {
				err = d.Decode(f, layers.LinkTypeEthernet, &p)
			}
			var de *DecodeError
			if !errors.As(err, &de) || de.Outcome != OutcomeMalformed {
				t.Errorf("got %v, want malformed", err)
			}
		})
	}
}

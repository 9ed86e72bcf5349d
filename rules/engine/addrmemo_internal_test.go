package engine

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/counting"
)

// TestAddrMemo: the address memo gives the text and key hash appendKey and
// Hash make, whatever the entry an address maps to held before: addresses
// that share an entry (more than the memo holds), IPv4 and its IPv4-mapped
// IPv6 form (the same 16 bytes), zones, a text too long to remember, an
// address and a prefix of it, prefixes of several lengths, the address of
// all zeros.
func TestAddrMemo(t *testing.T) {
	ipSrc, prefix := characteristics.MustParse("ip.src"), characteristics.MustParse("ip.src.prefix")
	var events []characteristics.Event
	add := func(a netip.Addr, bits int) {
		events = append(events, characteristics.Event{IP: a, Prefix: netip.PrefixFrom(a.WithZone(""), bits)})
	}
	add(netip.IPv6Unspecified(), 0) // first, while the memo is empty: all zeros, as an empty entry
	for i := range 3 * addrMemoSize {
		v4 := netip.AddrFrom4([4]byte{198, 51, byte(i >> 8), byte(i)})
		add(v4, 24)
		add(netip.AddrFrom16(v4.As16()), 120)
		add(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 6: byte(i >> 8), 7: byte(i), 15: 1}), 64)
	}
	for _, s := range []string{"2001:db8:1111:2222:3333:4444:5555:6666", "fe80::1", "fe80::1%eth0", "fe80::1%" + strings.Repeat("z", 40), "0.0.0.0", "::"} {
		a := netip.MustParseAddr(s)
		for _, bits := range []int{0, 8, 16, a.BitLen()} {
			add(a, bits) // 2001:db8:…/128 is too long for an entry
			add(a, bits)
		}
	}
	// An address whose prefix shares its entry, and two addresses that
	// share one: asked one after the other, each replaces the other.
	rng := rand.New(rand.NewPCG(1, 2))
	for i, shared, pairs := 0, 0, 0; (shared < 2 || pairs < 2) && i < 1<<20; i++ {
		a := netip.AddrFrom4([4]byte{203, 0, byte(i >> 8), byte(i)})
		if addrSlot(a.As16(), -1) == addrSlot(a.As16(), 24) {
			add(a, 24)
			shared++
		}
		b := netip.AddrFrom4([4]byte{192, byte(rng.Uint32()), byte(i >> 8), byte(i)})
		if addrSlot(a.As16(), -1) == addrSlot(b.As16(), -1) {
			add(a, 16)
			add(b, 16)
			pairs++
		}
		if i == 1<<20-1 {
			t.Fatalf("%d addresses sharing an entry with their prefix, %d pairs sharing one, in a million", shared, pairs)
		}
	}
	events = append(events, characteristics.Event{}) // neither
	var m Matches
	m.values = make([]keyed, 1)
	for round := range 4 {
		order := rng.Perm(len(events))
		if round == 0 {
			for i := range order {
				order[i] = i // the pairs above one after the other
			}
		}
		for _, i := range order {
			ev := &events[i]
			for _, c := range []characteristics.Characteristic{ipSrc, prefix} {
				want, ok := appendKey([]byte("x"), c, ev)
				m.Keys = append(m.Keys[:0], 'x')
				m.stamp++
				v := &m.values[0]
				var valid bool
				if c == ipSrc {
					if valid = ev.IP.IsValid(); valid {
						m.addrValue(v, ev.IP, -1)
					}
				} else if valid = ev.Prefix.IsValid(); valid {
					m.addrValue(v, ev.Prefix.Addr(), ev.Prefix.Bits())
				}
				what := fmt.Sprintf("round %d, %s of %v %v", round, c, ev.IP, ev.Prefix)
				if valid != ok {
					t.Fatalf("%s: valid %v, appendKey %v", what, valid, ok)
				}
				if !ok {
					continue
				}
				got := m.Keys[v.off : v.off+v.len]
				if v.off != 1 || !bytes.Equal(m.Keys, want) || !v.ok || v.stamp != m.stamp {
					t.Fatalf("%s: %q at %d (%+v), want %q", what, got, v.off, *v, want)
				}
				if v.hashed && v.hash != counting.Hash(got[:len(got)-1]) || !v.khashed || v.khash != counting.Hash(got) {
					t.Fatalf("%s: hashes %x %x, want those of %q", what, v.hash, v.khash, got)
				}
			}
		}
	}
}

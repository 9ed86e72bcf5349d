package engine

import (
	"net/netip"
	"testing"

	"github.com/guardd/guardd/counting"
)

// TestAddrCacheAsAppendTo checks the cached text and hashes of addresses
// against AppendTo, over more addresses than the cache holds, so that
// entries are replaced and found again.
func TestAddrCacheAsAppendTo(t *testing.T) {
	var addrs []netip.Addr
	for i := range 3000 {
		addrs = append(addrs, netip.AddrFrom4([4]byte{198, 51, byte(i >> 8), byte(i)}))
		a6 := [16]byte{0x20, 0x01, 0x0d, 0xb8, 14: byte(i >> 8), 15: byte(i)}
		addrs = append(addrs, netip.AddrFrom16(a6))
	}
	addrs = append(addrs, netip.MustParseAddr("::ffff:255.255.255.255"), netip.MustParseAddr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe"),
		netip.MustParseAddr("::"), netip.MustParseAddr("0.0.0.0"))
	var m Matches
	for round := range 3 {
		for _, a := range addrs {
			e := m.addr(a)
			want := a.String()
			if got := string(e.text[:e.n]); got != want {
				t.Fatalf("round %d: %v cached as %q", round, a, got)
			}
			if e.hash != counting.Hash([]byte(want)) || e.ended != counting.Hash(append([]byte(want), keyEnd)) {
				t.Fatalf("round %d: %v: hashes differ", round, a)
			}
		}
	}
}

package engine

import (
	"bytes"
	"math"
	"net/netip"
	"testing"

	"github.com/guardd/guardd/characteristics"
)

// TestAppendKeyAsAppendValue: appendKey, which reads addresses, prefixes
// and numbers itself, makes the bytes of Present and AppendKey for every
// characteristic, on events with and without each value, with and without
// an address cache (twice with one: once formatted, once remembered).
func TestAppendKeyAsAppendValue(t *testing.T) {
	var chars []characteristics.Characteristic
	for _, n := range characteristics.Names() {
		if c, err := characteristics.Parse(n); err == nil { // the subscripted ones are placeholders
			chars = append(chars, c)
		}
	}
	for _, n := range []string{`http.headers["x-a"]`, `http.cookies["session"]`, "log.request_id", `http.args["q"]`} {
		chars = append(chars, characteristics.MustParse(n))
	}
	v4 := netip.MustParseAddr("203.0.113.7")
	events := []characteristics.Event{
		{},
		{IP: v4, Prefix: netip.PrefixFrom(v4, 24).Masked(), ASN: 64500, Port: 443, Status: 200, RequestTime: 0.25, UserAgent: "a", Path: "/p", Query: "q=1",
			Headers: []characteristics.Field{{Name: "x-a", Value: "1"}}, Cookies: []characteristics.Field{{Name: "session", Value: "s"}}},
		{IP: netip.MustParseAddr("fe80::1%eth0"), Prefix: netip.MustParsePrefix("2001:db8::/64"), Status: 404, RequestTime: math.Copysign(0, -1)},
		{IP: netip.AddrFrom16(v4.As16()), RequestTime: 1e300, BytesSent: 1 << 60},
		{IP: v4, RequestTime: math.Inf(1)},
	}
	cache := new(addrCache)
	for i := range events {
		ev := &events[i]
		for _, c := range chars {
			var want []byte
			if c.Present(ev) {
				want = AppendKey([]byte("x"), c, ev)
			}
			for j, addrs := range []*addrCache{nil, cache, cache} {
				got, ok := appendKey([]byte("x"), c, ev, addrs)
				if ok != (want != nil) || ok && !bytes.Equal(got, want) {
					t.Errorf("event %d, %s, pass %d: %q %v, want %q", i, c, j, got, ok, want)
				}
			}
		}
	}
}

// TestAddrCache: the text of an address or a network is the same whether
// formatted or remembered, whatever was remembered before in its entry (many
// more addresses than entries, the same address as a network, an address
// with a zone whose text is too long to keep).
func TestAddrCache(t *testing.T) {
	c := new(addrCache)
	long := netip.MustParseAddr("fe80::1").WithZone(string(bytes.Repeat([]byte("z"), 60)))
	var addrs []netip.Addr
	for i := range 3 * addrCacheSize {
		addrs = append(addrs, netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 1}),
			netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: byte(i), 14: byte(i >> 8)}))
	}
	addrs = append(addrs, long, netip.MustParseAddr("::ffff:255.255.255.255"), netip.MustParseAddr("fe80::1%eth0"))
	check := func(a netip.Addr, n int) {
		t.Helper()
		var want []byte
		if n < 0 {
			want = a.AppendTo([]byte("x"))
		} else {
			want = netip.PrefixFrom(a, n).AppendTo([]byte("x"))
		}
		if got := c.appendAddr([]byte("x"), a, n); !bytes.Equal(got, want) {
			t.Fatalf("%s, %d: %q, want %q", a, n, got, want)
		}
	}
	for range 2 {
		for _, a := range addrs {
			check(a, -1)
			for _, n := range []int{0, 24, 32, 64, 128} {
				if p, err := a.WithZone("").Prefix(min(n, a.BitLen())); err == nil {
					check(p.Addr(), p.Bits())
				}
			}
		}
	}
	// Every entry holding another address, or the address as a network.
	a, b := netip.MustParseAddr("192.0.2.0"), netip.MustParseAddr("192.0.2.1")
	for _, other := range []addrText{{addr: b, bits: -1}, {addr: a, bits: 24}, {addr: a, bits: -1}} {
		text := other.addr.String()
		if other.bits >= 0 {
			text = netip.PrefixFrom(other.addr, int(other.bits)).String()
		}
		other.n = uint8(copy(other.text[:], text))
		for i := range c {
			c[i] = other
		}
		check(a, -1)
		for i := range c {
			c[i] = other
		}
		check(a, 24)
	}
}

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
// characteristic, on events with and without each value.
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
	for i := range events {
		ev := &events[i]
		for _, c := range chars {
			var want []byte
			if c.Present(ev) {
				want = AppendKey([]byte("x"), c, ev)
			}
			got, ok := appendKey([]byte("x"), c, ev)
			if ok != (want != nil) || ok && !bytes.Equal(got, want) {
				t.Errorf("event %d, %s: %q %v, want %q", i, c, got, ok, want)
			}
		}
	}
}

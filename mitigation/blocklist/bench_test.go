package blocklist

import (
	"fmt"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/guardd/guardd/mitigation"
)

// BenchmarkFeed serves the IPv4 feed of 100,000 addresses: cached (the
// table did not move) and rebuilt (it moved before every request).
func BenchmarkFeed(b *testing.B) {
	st := &fakeStore{}
	for i := range 100_000 {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		st.ms = append(st.ms, m(mitigation.ActionBlock, "ip.src", a.String(), time.Hour))
	}
	h, err := NewHandler(Config{Now: func() time.Time { return t0 }}, st, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, rebuild := range []bool{false, true} {
		b.Run(fmt.Sprintf("rebuild=%v", rebuild), func(b *testing.B) {
			r := httptest.NewRequest("GET", "/b/ipv4.txt", nil)
			b.ReportAllocs()
			for b.Loop() {
				if rebuild {
					st.cursor++
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != 200 {
					b.Fatal(w.Code)
				}
			}
		})
	}
}

package mitigation

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/dgraph-io/ristretto/v2"

	"github.com/guardd/guardd/characteristics"
)

var benchSizes = []int{1_000, 100_000}

// benchStore holds n ip.src mitigations; it returns their keys and as many
// keys of scopes it does not hold.
func benchStore(b *testing.B, n int) (s *Store, hits, misses []uint64) {
	b.Helper()
	s, err := New(Config{Now: func() time.Time { return t0 }}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		sc := ipScope(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}).String())
		m := mustAdd(b, s, mit("r", ActionBlock, sc, time.Hour), t0)
		hits = append(hits, m.Scope.Key())
		misses = append(misses, ipScope(netip.AddrFrom4([4]byte{11, byte(i >> 16), byte(i >> 8), byte(i)}).String()).Key())
	}
	return s, hits, misses
}

// BenchmarkLookup is the decision path's probe: one per scope shape per
// request. Keys are walked in order so each probe touches a different entry.
func BenchmarkLookup(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			s, hits, misses := benchStore(b, n)
			for _, tc := range []struct {
				name string
				keys []uint64
				want bool
			}{{"hit", hits, true}, {"miss", misses, false}} {
				b.Run(tc.name, func(b *testing.B) {
					b.ReportAllocs()
					i := 0
					for b.Loop() {
						if _, ok := s.Lookup(tc.keys[i], t0); ok != tc.want {
							b.Fatal("wrong answer")
						}
						if i++; i == len(tc.keys) {
							i = 0
						}
					}
				})
				b.Run(tc.name+"-parallel", func(b *testing.B) {
					b.ReportAllocs()
					b.RunParallel(func(pb *testing.PB) {
						i := 0
						for pb.Next() {
							s.Lookup(tc.keys[i], t0)
							if i++; i == len(tc.keys) {
								i = 0
							}
						}
					})
				})
			}
		})
	}
}

// BenchmarkLookupRistretto measures a ristretto cache in front of the table.
// It can only be a positive cache (a miss, or a Set it dropped, must fall
// through to the table), so a miss costs Get plus Lookup; the question is
// whether a hit is cheaper than Lookup alone.
func BenchmarkLookupRistretto(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			s, hits, misses := benchStore(b, n)
			c, err := ristretto.NewCache(&ristretto.Config[uint64, Mitigation]{
				NumCounters: int64(10 * n), MaxCost: int64(n), BufferItems: 64, IgnoreInternalCost: true,
			})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			for _, k := range hits {
				m, _ := s.Lookup(k, t0)
				c.Set(k, m, 1)
			}
			c.Wait()
			kept := 0
			for _, k := range hits {
				if _, ok := c.Get(k); ok {
					kept++
				}
			}
			get := func(k uint64) (Mitigation, bool) {
				if m, ok := c.Get(k); ok && m.Expires.After(t0) {
					return m, true
				}
				return s.Lookup(k, t0)
			}
			for _, tc := range []struct {
				name string
				keys []uint64
			}{{"hit", hits}, {"miss", misses}} {
				b.Run(tc.name, func(b *testing.B) {
					b.ReportAllocs()
					i := 0
					for b.Loop() {
						get(tc.keys[i])
						if i++; i == len(tc.keys) {
							i = 0
						}
					}
					b.ReportMetric(float64(kept)/float64(n), "kept/set")
				})
			}
		})
	}
}

// BenchmarkKeyFromEvent is the other half of a decision: keying an event's
// values for one scope shape, without building a Scope.
func BenchmarkKeyFromEvent(b *testing.B) {
	e := &characteristics.Event{IP: netip.MustParseAddr("2001:db8::7"), Path: "/login",
		Cookies: []characteristics.Field{{Name: "session", Value: "0123456789abcdef0123456789abcdef"}}}
	for _, tc := range []struct {
		name  string
		names []string
		want  Scope
	}{
		{"ip.src", []string{"ip.src"}, Scope{{Name: "ip.src", Value: "2001:db8::7"}}},
		{"cookie,path,ip.src", []string{`http.cookies["session"]`, "http.path", "ip.src"},
			Scope{{Name: `http.cookies["session"]`, Value: "0123456789abcdef0123456789abcdef"}, {Name: "http.path", Value: "/login"}, {Name: "ip.src", Value: "2001:db8::7"}}},
	} {
		sh, err := NewShape(tc.names)
		if err != nil {
			b.Fatal(err)
		}
		want := tc.want.Key()
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 256)
			for b.Loop() {
				var k uint64
				k, buf, _ = sh.Key(e, buf)
				if k != want {
					b.Fatal("key differs from Scope.Key")
				}
			}
		})
	}
}

// BenchmarkAdd creates mitigations (each a new scope), in memory and with the
// journal (one write(2) per Add, no fsync).
func BenchmarkAdd(b *testing.B) {
	for _, dir := range []string{"", "journal"} {
		b.Run("state="+cmpOr(dir, "memory"), func(b *testing.B) {
			cfg := Config{Now: func() time.Time { return t0 }}
			if dir != "" {
				cfg.StateDir = b.TempDir()
			}
			s, err := New(cfg, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				sc := Scope{{Name: "ip.src", Value: netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}).String()}}
				if _, _, err := s.Add(Mitigation{Rule: "r", Scope: sc, Expires: t0.Add(time.Hour)}, t0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

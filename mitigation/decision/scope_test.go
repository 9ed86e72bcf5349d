package decision

import (
	"net/netip"
	"testing"
	"time"

	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/decision/http1"
)

// scopeStore holds one mitigation per kind of scope that can cover a client
// by something other than its address: a prefix of any length, a user agent,
// a cookie, a header, an ASN.
func scopeStore(t *testing.T, allow mitigation.Allowlist) *Handler {
	t.Helper()
	store, err := mitigation.New(mitigation.Config{Allowlist: allow}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range []mitigation.Scope{
		{{Name: "ip.src.prefix", Value: "198.18.0.0/16"}},
		{{Name: "ip.src.prefix", Value: "198.51.100.128/25"}},
		{{Name: "ip.src.prefix", Value: "2001:db8::/32"}},
		{{Name: "http.user_agent", Value: "evil-bot/1.0"}},
		{{Name: `http.cookies["session"]`, Value: "stolen"}},
		{{Name: `http.headers["x-api-key"]`, Value: "leaked"}},
	} {
		if _, ok, err := store.Add(mitigation.Mitigation{Rule: "manual", Origin: "manual", Action: mitigation.ActionBlock,
			Scope: sc, Expires: now.Add(time.Hour)}, now); err != nil || !ok {
			t.Fatalf("add %s: %v %v", sc, ok, err)
		}
	}
	h, err := New(Config{Store: store, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func decideAction(t *testing.T, h *Handler, ip, ua, cookie, apiKey string) string {
	t.Helper()
	r := decideReq(ip, "GET", "/", cookie)
	for i := range r.Headers {
		if r.Headers[i].Name == "user-agent" && ua != "" {
			r.Headers[i].Value = ua
		}
	}
	if apiKey != "" {
		r.Headers = append(r.Headers, http1.Header{Name: "x-api-key", Value: apiKey})
	}
	s := h.pool.Get().(*scratch)
	defer h.pool.Put(s)
	d, err := h.Decide(r, s, now)
	if err != nil {
		t.Fatal(err)
	}
	if d.Allow {
		return "allow"
	}
	return d.Action.String()
}

// A manual prefix ban of any length, IPv4 or IPv6, covers the addresses in
// it, whatever prefix length the enricher gives ip.src.prefix (/24, /64).
func TestDecidePrefixAnyLength(t *testing.T) {
	h := scopeStore(t, mitigation.Allowlist{})
	for _, tc := range []struct{ ip, want string }{
		{"198.18.200.1", "block"},
		{"::ffff:198.18.0.9", "block"},
		{"198.19.0.1", "allow"},
		{"198.51.100.129", "block"},
		{"198.51.100.127", "allow"},
		{"2001:db8:7::1", "block"},
		{"2001:db9::1", "allow"},
	} {
		if got := decideAction(t, h, tc.ip, "", "", ""); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.ip, got, tc.want)
		}
	}
}

// An allowlisted client receives no action, whatever the scope of the
// mitigation its request meets.
func TestDecideAllowlistedAnyScope(t *testing.T) {
	h := scopeStore(t, mitigation.Allowlist{
		Prefixes: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")},
		Values:   []mitigation.Pair{{Name: `http.headers["x-monitor"]`, Value: "probe-7"}},
	})
	for _, tc := range []struct {
		name, ip, ua, cookie, apiKey, want string
	}{
		{"user agent", "192.0.2.10", "evil-bot/1.0", "", "", "allow"},
		{"cookie", "192.0.2.10", "", "session=stolen", "", "allow"},
		{"header", "192.0.2.10", "", "", "leaked", "allow"},
		{"not allowlisted, user agent", "203.0.113.10", "evil-bot/1.0", "", "", "block"},
		{"not allowlisted, cookie", "203.0.113.10", "", "session=stolen", "", "block"},
		{"not allowlisted, banned prefix", "198.18.8.7", "", "", "", "block"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decideAction(t, h, tc.ip, tc.ua, tc.cookie, tc.apiKey); got != tc.want {
				t.Errorf("%s", got)
			}
		})
	}
	// An allowlisted value, not only an address.
	r := decideReq("203.0.113.10", "GET", "/", "session=stolen")
	r.Headers = append(r.Headers, http1.Header{Name: "x-monitor", Value: "probe-7"})
	s := h.pool.Get().(*scratch)
	if d, _ := h.Decide(r, s, now); !d.Allow {
		t.Errorf("request with an allowlisted header: %s", d.Action)
	}
}

// Prefix bans of several lengths and an allowlist leave a decision
// allocation-free.
func TestDecideScopesAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	h := scopeStore(t, mitigation.Allowlist{
		Prefixes: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")},
		Values:   []mitigation.Pair{{Name: `http.headers["x-monitor"]`, Value: "probe-7"}, {Name: "ip.src.asnum", Value: "64500"}},
	})
	s := h.pool.Get().(*scratch)
	for _, ip := range []string{"198.18.3.4", "2001:db8::1", "203.0.113.9"} {
		r := decideReq(ip, "GET", "/", "session=x")
		h.Decide(r, s, now)
		if n := testing.AllocsPerRun(200, func() { h.Decide(r, s, now) }); n != 0 {
			t.Errorf("%s: Decide allocates %v times", ip, n)
		}
	}
}

// BenchmarkDecidePrefixes: a request from an address under no mitigation,
// with manual prefix bans of 1, 8 and 25 distinct IPv4 lengths held (each
// length is a shape, one key and one probe per request), to show what any
// prefix length costs a decision.
func BenchmarkDecidePrefixes(b *testing.B) {
	for _, lengths := range []int{1, 8, 25} {
		b.Run("lengths="+itoa(lengths), func(b *testing.B) {
			store, err := mitigation.New(mitigation.Config{}, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			for i := range lengths {
				bits := 8 + i
				p := netip.PrefixFrom(netip.AddrFrom4([4]byte{100, 64, 0, 0}), bits).Masked()
				if _, ok, err := store.Add(mitigation.Mitigation{Rule: "manual", Origin: "manual", Action: mitigation.ActionBlock,
					Scope: mitigation.Scope{{Name: "ip.src.prefix", Value: p.String()}}, Expires: now.Add(time.Hour)}, now); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
			h, err := New(Config{Store: store, Now: func() time.Time { return now }})
			if err != nil {
				b.Fatal(err)
			}
			r := decideReq("192.0.2.44", "GET", "/products/7?x=1", "session=abc")
			s := h.pool.Get().(*scratch)
			b.ReportAllocs()
			for b.Loop() {
				if d, _ := h.Decide(r, s, now); !d.Allow {
					b.Fatal("denied")
				}
			}
		})
	}
}

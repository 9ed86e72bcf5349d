package mitigation

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/guardd/guardd/characteristics"
)

func TestAllowlist(t *testing.T) {
	al := Allowlist{
		Prefixes: []netip.Prefix{
			netip.MustParsePrefix("192.0.2.0/28"),
			netip.MustParsePrefix("2001:db8:aa::/48"),
			netip.MustParsePrefix("::ffff:198.51.100.0/120"), // IPv4-mapped form of 198.51.100.0/24
			netip.MustParsePrefix("10.1.2.3/32"),
		},
		Values: []Pair{
			{Name: "tls.ja4", Value: "t13d1516h2_8daaf6152771_02713d6af862"},
			{Name: `http.headers["x-monitor"]`, Value: "probe-7"},
			{Name: "ip.src", Value: "203.0.113.99"},
			{Name: "ip.src.prefix", Value: "100.64.0.0/10"},
		},
	}
	for _, tc := range []struct {
		name string
		s    Scope
		want bool
	}{
		{"ipv4 inside", Scope{{Name: "ip.src", Value: "192.0.2.5"}}, true},
		{"ipv4 edge", Scope{{Name: "ip.src", Value: "192.0.2.15"}}, true},
		{"ipv4 outside", Scope{{Name: "ip.src", Value: "192.0.2.16"}}, false},
		{"ipv4 host prefix", Scope{{Name: "ip.src", Value: "10.1.2.3"}}, true},
		{"ipv6 inside", Scope{{Name: "ip.src", Value: "2001:db8:aa:1::7"}}, true},
		{"ipv6 outside", Scope{{Name: "ip.src", Value: "2001:db8:ab::7"}}, false},
		{"ipv4-mapped scope, v4 allowlist", Scope{{Name: "ip.src", Value: "::ffff:192.0.2.5"}}, true},
		{"ipv4 scope, mapped allowlist", Scope{{Name: "ip.src", Value: "198.51.100.20"}}, true},
		{"ipv4-mapped scope, mapped allowlist", Scope{{Name: "ip.src", Value: "::ffff:198.51.100.20"}}, true},
		{"mapped outside", Scope{{Name: "ip.src", Value: "::ffff:198.51.101.1"}}, false},
		{"v4 address is not its v6 twin", Scope{{Name: "ip.src", Value: "::c000:205"}}, false},
		{"prefix containing allowlist", Scope{{Name: "ip.src.prefix", Value: "192.0.2.0/24"}}, true},
		{"prefix containing a /32", Scope{{Name: "ip.src.prefix", Value: "10.1.2.0/24"}}, true},
		{"prefix inside allowlist", Scope{{Name: "ip.src.prefix", Value: "2001:db8:aa:5::/64"}}, true},
		{"prefix beside allowlist", Scope{{Name: "ip.src.prefix", Value: "192.0.2.16/28"}}, false},
		{"ipv6 prefix overlapping", Scope{{Name: "ip.src.prefix", Value: "2001:db8::/32"}}, true},
		{"ipv6 prefix beside", Scope{{Name: "ip.src.prefix", Value: "2001:db8:ab::/48"}}, false},
		{"ip value as network", Scope{{Name: "ip.src", Value: "203.0.113.99"}}, true},
		{"prefix over ip value", Scope{{Name: "ip.src.prefix", Value: "203.0.113.0/24"}}, true},
		{"prefix value as network", Scope{{Name: "ip.src", Value: "100.100.1.1"}}, true},
		{"ja4 exact", Scope{{Name: "tls.ja4", Value: "t13d1516h2_8daaf6152771_02713d6af862"}}, true},
		{"ja4 other", Scope{{Name: "tls.ja4", Value: "t13d1516h2_8daaf6152771_000000000000"}}, false},
		{"header exact", Scope{{Name: `http.headers["x-monitor"]`, Value: "probe-7"}}, true},
		{"header other name", Scope{{Name: `http.headers["x-probe"]`, Value: "probe-7"}}, false},
		{"any pair allows", Scope{{Name: "http.path", Value: "/login"}, {Name: "ip.src", Value: "192.0.2.1"}}, true},
		{"no pair allows", Scope{{Name: "http.path", Value: "/login"}, {Name: "ip.src", Value: "192.0.3.1"}}, false},
		{"unparseable address", Scope{{Name: "ip.src", Value: "nope"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := al.Allows(tc.s); got != tc.want {
				t.Errorf("Allows(%s) = %v, want %v", tc.s, got, tc.want)
			}
		})
	}
	if (Allowlist{}).Allows(Scope{{Name: "ip.src", Value: "192.0.2.1"}}) {
		t.Error("empty allowlist allows")
	}
}

func TestAllowlistValidation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		al      Allowlist
		wantErr string
	}{
		{"invalid prefix", Allowlist{Prefixes: []netip.Prefix{{}}}, "allowlist prefix 1"},
		{"unknown name", Allowlist{Values: []Pair{{Name: "tls.ja5", Value: "x"}}}, "allowlist value 1"},
		{"bad address", Allowlist{Values: []Pair{{Name: "ip.src", Value: "x"}}}, "allowlist value 1"},
		{"empty value", Allowlist{Values: []Pair{{Name: "tls.ja4", Value: ""}}}, "empty value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Config{Allowlist: tc.al}, nil, nil)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("New error = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestAllowlisted: the per-request check covers the client's address and the
// request's values, whatever the scope of the mitigations it would meet.
func TestAllowlisted(t *testing.T) {
	s, err := New(Config{Allowlist: Allowlist{
		Prefixes: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/28"), netip.MustParsePrefix("::ffff:198.51.100.0/120")},
		Values: []Pair{
			{Name: `http.headers["x-monitor"]`, Value: "probe-7"},
			{Name: "ip.src", Value: "2001:db8::99"},
			{Name: "ip.src.asnum", Value: "64500"},
			{Name: "tls.ja4", Value: "t13d1516h2_8daaf6152771_02713d6af862"},
		},
	}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		ev   characteristics.Event
		want bool
	}{
		{"network", characteristics.Event{IP: netip.MustParseAddr("192.0.2.7")}, true},
		{"outside", characteristics.Event{IP: netip.MustParseAddr("192.0.2.17")}, false},
		{"mapped client", characteristics.Event{IP: netip.MustParseAddr("::ffff:192.0.2.7")}, true},
		{"mapped allowlist", characteristics.Event{IP: netip.MustParseAddr("198.51.100.200")}, true},
		{"ip value", characteristics.Event{IP: netip.MustParseAddr("2001:db8::99")}, true},
		{"other v6", characteristics.Event{IP: netip.MustParseAddr("2001:db8::98")}, false},
		{"header", characteristics.Event{IP: netip.MustParseAddr("203.0.113.1"),
			Headers: []characteristics.Field{{Name: "x-monitor", Value: "probe-7"}}}, true},
		{"header other value", characteristics.Event{IP: netip.MustParseAddr("203.0.113.1"),
			Headers: []characteristics.Field{{Name: "x-monitor", Value: "probe-8"}}}, false},
		{"asn", characteristics.Event{IP: netip.MustParseAddr("203.0.113.1"), ASN: 64500}, true},
		{"other asn", characteristics.Event{IP: netip.MustParseAddr("203.0.113.1"), ASN: 64501}, false},
		{"ja4", characteristics.Event{TLS: characteristics.TLS{JA4: "t13d1516h2_8daaf6152771_02713d6af862"}}, true},
		{"no address", characteristics.Event{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := s.Allowlisted(&tc.ev); got != tc.want {
				t.Errorf("Allowlisted = %v, want %v", got, tc.want)
			}
		})
	}
	ev := &characteristics.Event{IP: netip.MustParseAddr("203.0.113.1"), ASN: 64501,
		Headers: []characteristics.Field{{Name: "x-monitor", Value: "probe-8"}}}
	if n := testing.AllocsPerRun(100, func() { s.Allowlisted(ev) }); n != 0 {
		t.Errorf("Allowlisted allocates %v", n)
	}
}

// TestSetAllowlist: a new allowlist applies to Add and removes what it covers.
func TestSetAllowlist(t *testing.T) {
	s := newStore(t, Config{})
	covered := mustAdd(t, s, mit("r", ActionBlock, ipScope("192.0.2.5"), time.Hour), t0)
	kept := mustAdd(t, s, mit("r", ActionBlock, ipScope("192.0.3.5"), time.Hour), t0)
	if err := s.SetAllowlist(Allowlist{Prefixes: []netip.Prefix{{}}}); err == nil {
		t.Fatal("SetAllowlist of an invalid prefix: no error")
	}
	if err := s.SetAllowlist(Allowlist{Prefixes: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Lookup(covered.Scope.Key(), t0); ok {
		t.Error("a mitigation the new allowlist covers is still held")
	}
	if _, ok := s.Lookup(kept.Scope.Key(), t0); !ok {
		t.Error("a mitigation outside the new allowlist was removed")
	}
	if _, ok, err := s.Add(mit("r", ActionBlock, ipScope("192.0.2.6"), time.Hour), t0); ok || err != nil {
		t.Errorf("Add under the new allowlist = %v, %v", ok, err)
	}
	if !s.Allowlisted(&characteristics.Event{IP: netip.MustParseAddr("192.0.2.6")}) {
		t.Error("Allowlisted ignores the new allowlist")
	}
}

package nftables

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/guardd/guardd/mitigation"
)

// fixture is a store, a pusher on it working in a fresh namespace, and the
// pusher's metrics.
type fixture struct {
	ns    *netns
	store *mitigation.Store
	p     *Pusher
	reg   *prometheus.Registry
}

func newFixture(t testing.TB, cfg Config) *fixture {
	t.Helper()
	requireKernel(t)
	ns := newNetNS(t)
	store, err := mitigation.New(mitigation.Config{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cfg.NetNSFd = ns.fd
	reg := prometheus.NewRegistry()
	p, err := New(cfg, store, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return &fixture{ns: ns, store: store, p: p, reg: reg}
}

// ban adds a mitigation on one pair for ttl from now.
func (f *fixture) ban(t testing.TB, name, value string, a mitigation.Action, ttl time.Duration) mitigation.Mitigation {
	t.Helper()
	now := time.Now()
	m, ok, err := f.store.Add(mitigation.Mitigation{
		Rule: "test", Action: a, Scope: mitigation.Scope{{Name: name, Value: value}}, Expires: now.Add(ttl),
	}, now)
	if err != nil || !ok {
		t.Fatalf("Add %s=%s: ok=%v err=%v", name, value, ok, err)
	}
	return m
}

func (f *fixture) reconcile(t testing.TB) {
	t.Helper()
	if err := f.p.Reconcile(time.Now()); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) poll(t testing.TB) {
	t.Helper()
	if err := f.p.Poll(time.Now()); err != nil {
		t.Fatal(err)
	}
}

// checkSets compares the four sets with want (nil means empty).
func (f *fixture) checkSets(t testing.TB, want map[string][]string) {
	t.Helper()
	for _, set := range setNames {
		got := f.ns.elements(t, "guardd", set)
		w := slices.Clone(want[set])
		slices.Sort(w)
		if !slices.Equal(got, w) {
			t.Errorf("set %s = %q, want %q", set, got, w)
		}
	}
}

func (f *fixture) reconciles(result string) float64 {
	return testutil.ToFloat64(f.p.met.reconciles.WithLabelValues(result))
}

func TestPushDropsPackets(t *testing.T) {
	f := newFixture(t, Config{})
	f.ns.addAddrs(t, "198.51.100.1", "198.51.100.7", "198.51.100.8", "203.0.113.9",
		"2001:db8:ff::1", "2001:db8::7", "2001:db8:1::8")
	f.ban(t, "ip.src", "198.51.100.7", mitigation.ActionFirewall, time.Hour)
	f.ban(t, "ip.src", "2001:db8::7", mitigation.ActionFirewall, time.Hour)
	f.ban(t, "ip.src.prefix", "203.0.113.0/24", mitigation.ActionFirewall, time.Hour)
	f.ban(t, "ip.src", "198.51.100.8", mitigation.ActionBlock, time.Hour) // not pushed by default
	f.reconcile(t)

	f.checkSets(t, map[string][]string{
		"v4":    {"198.51.100.7"},
		"v6net": {"2001:db8::/64"},
		"v4net": {"203.0.113.0/24"},
	})
	list := f.ns.run(t, "nft", "list", "table", "inet", "guardd")
	for _, s := range []string{"type filter hook input priority filter; policy accept;", "ip saddr @v4 counter packets", "ip6 saddr @v6net counter", "flags interval,timeout", "timeout 1h"} {
		if !strings.Contains(list, s) {
			t.Errorf("nft list table lacks %q:\n%s", s, list)
		}
	}
	for _, tc := range []struct {
		src, dst string
		want     bool
	}{
		{"198.51.100.7", "198.51.100.1", false},
		{"198.51.100.8", "198.51.100.1", true},
		{"203.0.113.9", "198.51.100.1", false},
		{"2001:db8::7", "2001:db8:ff::1", false},
		{"2001:db8:1::8", "2001:db8:ff::1", true},
	} {
		t.Run(tc.src, func(t *testing.T) {
			if got := f.ns.reaches(t, tc.src, tc.dst); got != tc.want {
				t.Errorf("datagram from %s reaches: %v, want %v", tc.src, got, tc.want)
			}
		})
	}
	for set, want := range map[string]int{"v4": 1, "v4net": 1, "v6net": 1, "v6": 0} {
		if n := f.ns.counter(t, "guardd", "input", set); n != want {
			t.Errorf("rule on @%s counted %d packets, want %d", set, n, want)
		}
	}
	if got := testutil.ToFloat64(f.p.met.elements.WithLabelValues("ipv4", "address")); got != 1 {
		t.Errorf("elements{ipv4,address} = %v, want 1", got)
	}
}

var _ = netip.Addr{}

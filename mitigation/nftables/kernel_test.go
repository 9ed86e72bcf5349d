package nftables

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/testwait"
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

func TestFeed(t *testing.T) {
	f := newFixture(t, Config{})
	f.reconcile(t)
	f.checkSets(t, nil)

	a := f.ban(t, "ip.src", "192.0.2.1", mitigation.ActionFirewall, time.Hour)
	f.ban(t, "ip.src.prefix", "2001:db8:5::/48", mitigation.ActionFirewall, time.Hour)
	f.poll(t)
	f.checkSets(t, map[string][]string{"v4": {"192.0.2.1"}, "v6net": {"2001:db8:5::/48"}})

	// Extending the mitigation replaces the element's timeout.
	f.ban(t, "ip.src", "192.0.2.1", mitigation.ActionFirewall, 3*time.Hour)
	f.poll(t)
	out := f.ns.run(t, "nft", "list", "set", "inet", "guardd", "v4")
	if !strings.Contains(out, "timeout 3h") {
		t.Errorf("extended element not at 3h:\n%s", out)
	}

	f.store.Delete(a.ID)
	f.poll(t)
	f.checkSets(t, map[string][]string{"v6net": {"2001:db8:5::/48"}})

	// A mitigation whose action is no longer pushed leaves the set.
	f.ban(t, "ip.src.prefix", "2001:db8:5::/48", mitigation.ActionBlock, time.Hour)
	f.poll(t)
	f.checkSets(t, nil)
	if n := testutil.ToFloat64(f.p.met.pushErrors); n != 0 {
		t.Errorf("push errors = %v, want 0", n)
	}
}

func TestReconcileRepairs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		behind func(t *testing.T, f *fixture) // what is done behind guardd's back
	}{
		{"nothing", func(*testing.T, *fixture) {}},
		{"flush set", func(t *testing.T, f *fixture) {
			f.ns.run(t, "nft", "flush", "set", "inet", "guardd", "v4")
			f.ns.run(t, "nft", "flush", "set", "inet", "guardd", "v4net")
		}},
		{"delete table", func(t *testing.T, f *fixture) {
			f.ns.run(t, "nft", "delete", "table", "inet", "guardd")
		}},
		{"flush chain", func(t *testing.T, f *fixture) {
			f.ns.run(t, "nft", "flush", "chain", "inet", "guardd", "input")
		}},
		{"delete 10% of elements", func(t *testing.T, f *fixture) {
			var v4, v4net []string
			for i := 0; i < 200; i += 10 {
				v4 = append(v4, fmt.Sprintf("10.0.0.%d", i))
				v4net = append(v4net, fmt.Sprintf("10.1.%d.0/24", i))
			}
			f.ns.run(t, "nft", "delete", "element", "inet", "guardd", "v4", "{"+strings.Join(v4, ",")+"}")
			f.ns.run(t, "nft", "delete", "element", "inet", "guardd", "v4net", "{"+strings.Join(v4net, ",")+"}")
		}},
		{"foreign elements", func(t *testing.T, f *fixture) {
			f.ns.run(t, "nft", "add", "element", "inet", "guardd", "v4", "{ 172.16.0.1, 172.16.0.2 timeout 1h }")
			f.ns.run(t, "nft", "add", "element", "inet", "guardd", "v6net", "{ 2001:db8:77::/48 }")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Config{})
			want := map[string][]string{}
			for i := range 200 {
				f.ban(t, "ip.src", fmt.Sprintf("10.0.0.%d", i), mitigation.ActionFirewall, time.Hour)
				f.ban(t, "ip.src.prefix", fmt.Sprintf("10.1.%d.0/24", i), mitigation.ActionFirewall, time.Duration(i+1)*time.Minute)
				want["v4"] = append(want["v4"], fmt.Sprintf("10.0.0.%d", i))
				want["v4net"] = append(want["v4net"], fmt.Sprintf("10.1.%d.0/24", i))
			}
			f.reconcile(t)
			f.checkSets(t, want)
			tc.behind(t, f)
			f.reconcile(t)
			f.checkSets(t, want)
			if !strings.Contains(f.ns.run(t, "nft", "list", "chain", "inet", "guardd", "input"), "ip saddr @v4 counter") {
				t.Error("drop rules not restored")
			}
			wantRepaired := 1.0
			if tc.name == "nothing" {
				wantRepaired = 0
			}
			if got := f.reconciles(resultRepaired); got != wantRepaired {
				t.Errorf("reconcile{repaired} = %v, want %v", got, wantRepaired)
			}
			f.reconcile(t) // nothing left to repair
			if got := f.reconciles(resultOK); got != 3-wantRepaired {
				t.Errorf("reconcile{ok} = %v, want %v", got, 3-wantRepaired)
			}
		})
	}
}

func TestBadElementIsolated(t *testing.T) {
	f := newFixture(t, Config{BatchElements: 64})
	f.reconcile(t)
	// Behind guardd's back: a range that the next push overlaps.
	f.ns.run(t, "nft", "add", "element", "inet", "guardd", "v4net", "{ 10.9.0.0/16 timeout 1h }")
	var want []string
	for i := range 100 {
		f.ban(t, "ip.src.prefix", fmt.Sprintf("10.%d.1.0/24", i), mitigation.ActionFirewall, time.Hour)
		want = append(want, fmt.Sprintf("10.%d.1.0/24", i))
	}
	f.poll(t)
	got := f.ns.elements(t, "guardd", "v4net")
	wantNow := slices.Concat([]string{"10.9.0.0/16"}, slices.DeleteFunc(slices.Clone(want), func(s string) bool { return s == "10.9.1.0/24" }))
	slices.Sort(wantNow)
	if !slices.Equal(got, wantNow) {
		t.Errorf("after push: v4net = %q, want %q", got, wantNow)
	}
	if n := testutil.ToFloat64(f.p.met.pushErrors); n != 1 {
		t.Errorf("push errors = %v, want 1 (the overlapping element)", n)
	}
	f.poll(t) // the refused element is not retried every poll
	if n := testutil.ToFloat64(f.p.met.pushErrors); n != 1 {
		t.Errorf("push errors after a quiet poll = %v, want 1", n)
	}
	f.reconcile(t) // deletes the foreign range, adds the refused one
	f.checkSets(t, map[string][]string{"v4net": want})
}

func TestOverlappingPrefixesMerged(t *testing.T) {
	f := newFixture(t, Config{})
	f.reconcile(t)
	for _, b := range []struct {
		name, value string
		ttl         time.Duration
	}{
		{"ip.src.prefix", "10.0.0.0/8", time.Hour},
		{"ip.src.prefix", "10.1.0.0/16", 2 * time.Hour}, // outlives its parent: splits it
		{"ip.src.prefix", "10.2.0.0/16", time.Minute},   // covered
		{"ip.src", "10.3.3.3", time.Minute},             // covered
		{"ip.src", "10.3.3.4", 3 * time.Hour},           // outlives the range: kept
		{"ip.src.prefix", "192.0.2.0/25", time.Hour},    // adjacent halves of one expiry
		{"ip.src.prefix", "192.0.2.128/25", time.Hour},
		{"ip.src.prefix", "2001:db8::/32", time.Hour},
		{"ip.src.prefix", "2001:db8:1::/48", time.Hour},
		{"ip.src", "2001:db8:2::1", time.Hour}, // its /64 is inside the /32
	} {
		f.ban(t, b.name, b.value, mitigation.ActionFirewall, b.ttl)
	}
	f.poll(t)
	f.checkSets(t, map[string][]string{
		"v4":    {"10.3.3.4"},
		"v4net": {"10.0.0.0/16", "10.1.0.0/16", "10.2.0.0-10.255.255.255", "192.0.2.0/24"},
		"v6net": {"2001:db8::/32"},
	})
	if n := testutil.ToFloat64(f.p.met.pushErrors); n != 0 {
		t.Errorf("push errors = %v, want 0", n)
	}
}

func TestExpiry(t *testing.T) {
	f := newFixture(t, Config{})
	f.reconcile(t)
	f.ban(t, "ip.src", "192.0.2.1", mitigation.ActionFirewall, 1500*time.Millisecond)
	f.ban(t, "ip.src.prefix", "198.51.100.0/24", mitigation.ActionFirewall, 1500*time.Millisecond)
	f.ban(t, "ip.src", "192.0.2.2", mitigation.ActionFirewall, time.Hour)
	f.poll(t)
	f.checkSets(t, map[string][]string{"v4": {"192.0.2.1", "192.0.2.2"}, "v4net": {"198.51.100.0/24"}})
	// The kernel expires the elements on its own (1.5 s) ...
	testwait.Until(t, 20*time.Second, "the kernel to expire 192.0.2.1 and 198.51.100.0/24", func() bool {
		return slices.Equal(f.ns.elements(t, "guardd", "v4"), []string{"192.0.2.2"}) && len(f.ns.elements(t, "guardd", "v4net")) == 0
	})
	f.checkSets(t, map[string][]string{"v4": {"192.0.2.2"}})
	// ... and the store's expiry is no push error.
	f.store.Expire(time.Now())
	f.poll(t)
	f.reconcile(t)
	f.checkSets(t, map[string][]string{"v4": {"192.0.2.2"}})
	if n := testutil.ToFloat64(f.p.met.pushErrors); n != 0 {
		t.Errorf("push errors = %v, want 0", n)
	}
	// The expired range can come back.
	f.ban(t, "ip.src.prefix", "198.51.100.0/24", mitigation.ActionFirewall, time.Hour)
	f.poll(t)
	f.checkSets(t, map[string][]string{"v4": {"192.0.2.2"}, "v4net": {"198.51.100.0/24"}})
}

func TestSetsOnly(t *testing.T) {
	f := newFixture(t, Config{Table: "filter", SetsOnly: true, SetPrefix: "guardd_"})
	f.ns.run(t, "nft", "-f", "testdata/sets-only.nft")
	f.ns.addAddrs(t, "198.51.100.1", "198.51.100.7", "198.51.100.8")
	f.ban(t, "ip.src", "198.51.100.7", mitigation.ActionFirewall, time.Hour)
	f.reconcile(t)
	if got := f.ns.elements(t, "filter", "guardd_v4"); !slices.Equal(got, []string{"198.51.100.7"}) {
		t.Errorf("guardd_v4 = %q", got)
	}
	if out := f.ns.run(t, "nft", "list", "chains"); strings.Count(out, "chain ") != 1 {
		t.Errorf("sets-only mode created a chain:\n%s", out)
	}
	if f.ns.reaches(t, "198.51.100.7", "198.51.100.1") {
		t.Error("banned source reaches through the operator's rule")
	}
	if !f.ns.reaches(t, "198.51.100.8", "198.51.100.1") {
		t.Error("other source dropped")
	}
	if n := f.ns.counter(t, "filter", "input", "guardd_v4"); n != 1 {
		t.Errorf("operator's rule counted %d packets, want 1", n)
	}
}

func TestRun(t *testing.T) {
	f := newFixture(t, Config{PollInterval: 10 * time.Millisecond})
	f.ban(t, "ip.src", "192.0.2.1", mitigation.ActionFirewall, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.p.Run(ctx) }()
	f.ban(t, "ip.src", "192.0.2.2", mitigation.ActionFirewall, time.Hour)
	// Run creates the table on its own goroutine: until then there is no
	// set to list.
	testwait.Until(t, 30*time.Second, "Run to push 192.0.2.1 and 192.0.2.2 to v4", func() bool {
		return f.ns.hasSet("guardd", "v4") && slices.Equal(f.ns.elements(t, "guardd", "v4"), []string{"192.0.2.1", "192.0.2.2"})
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	f.p.Close()
	f.p.Close()
	if err := f.p.Run(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Run after Close = %v, want ErrClosed", err)
	}
}

// TestBatchLandsWhole sends batches far over one netlink message's 64 KiB
// element list (see maxListBytes) and over the default socket send buffer,
// and checks that every element arrived.
func TestBatchLandsWhole(t *testing.T) {
	const n = 20000
	f := newFixture(t, Config{BatchElements: 65536, IPv6Bits: 128})
	now := time.Now()
	for i := range n {
		a := benchAddr(i)
		a4 := a.As4()
		a6 := netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 8: a4[1], 9: a4[2], 10: a4[3], 15: 1})
		p := benchPrefix(i)
		p6 := netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb9, 4: a4[1], 5: a4[2], 6: a4[3]}), 56)
		for _, sc := range []mitigation.Pair{{Name: "ip.src", Value: a.String()}, {Name: "ip.src", Value: a6.String()},
			{Name: "ip.src.prefix", Value: p.String()}, {Name: "ip.src.prefix", Value: p6.String()}} {
			if _, _, err := f.store.Add(mitigation.Mitigation{Rule: "r", Action: mitigation.ActionFirewall,
				Scope: mitigation.Scope{sc}, Expires: now.Add(time.Hour + time.Duration(i)*time.Second)}, now); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.reconcile(t)
	st, err := f.p.kern.read(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for i := range numSets {
		if len(st[i]) != n {
			t.Errorf("set %s holds %d elements, want %d", setNames[i], len(st[i]), n)
		}
	}
	if n := testutil.ToFloat64(f.p.met.pushErrors); n != 0 {
		t.Errorf("push errors = %v, want 0", n)
	}
}

func TestChains(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"default", Config{}, []string{"chain input {\n\t\ttype filter hook input priority filter; policy accept;"}},
		{"input and forward at mangle", Config{Hooks: []string{"input", "forward"}, Priority: -150}, []string{
			"chain input {\n\t\ttype filter hook input priority mangle; policy accept;",
			"chain forward {\n\t\ttype filter hook forward priority mangle; policy accept;",
		}},
		{"sets only", Config{SetsOnly: true}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.cfg)
			f.reconcile(t)
			out := f.ns.run(t, "nft", "list", "table", "inet", "guardd")
			if got := strings.Count(out, "chain "); got != len(tc.want) {
				t.Errorf("%d chains, want %d:\n%s", got, len(tc.want), out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("no %q in:\n%s", w, out)
				}
			}
			if len(tc.want) > 0 && strings.Count(out, "counter packets 0 bytes 0 drop") != 4*len(tc.want) {
				t.Errorf("want 4 drop rules per chain:\n%s", out)
			}
		})
	}
}

// TestPushWithoutTable: the table deleted between polls fails the next push
// with errNoStructure (Run then reconciles), and the reconcile restores all.
func TestPushWithoutTable(t *testing.T) {
	f := newFixture(t, Config{})
	f.ban(t, "ip.src", "192.0.2.1", mitigation.ActionFirewall, time.Hour)
	f.reconcile(t)
	f.ns.run(t, "nft", "delete", "table", "inet", "guardd")
	f.ban(t, "ip.src", "192.0.2.2", mitigation.ActionFirewall, time.Hour)
	if err := f.p.Poll(time.Now()); !errors.Is(err, errNoStructure) {
		t.Fatalf("Poll = %v, want errNoStructure", err)
	}
	f.reconcile(t)
	f.checkSets(t, map[string][]string{"v4": {"192.0.2.1", "192.0.2.2"}})
}

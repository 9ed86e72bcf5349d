package nftables

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"

	"github.com/guardd/guardd/mitigation"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"zero", Config{}, ""},
		{"sets only ip", Config{SetsOnly: true, Family: "ip", Table: "filter", SetPrefix: "guardd_"}, ""},
		{"forward", Config{Hooks: []string{"input", "forward"}, Priority: -150}, ""},
		{"bad table", Config{Table: "my table"}, `table "my table": byte 3`},
		{"bad family", Config{Family: "arp"}, "expect 'inet', 'ip', 'ip6', 'bridge' or 'netdev'"},
		{"chain needs inet", Config{Family: "ip"}, "needs sets_only"},
		{"bad hook", Config{Hooks: []string{"output"}}, `hook "output"; expect 'input' or 'forward'`},
		{"empty hooks", Config{Hooks: []string{}}, "hooks is empty"},
		{"twice", Config{Hooks: []string{"input", "input"}}, "listed twice"},
		{"shadowban", Config{Actions: []mitigation.Action{mitigation.ActionShadowBan}}, `action "shadowban" cannot be pushed`},
		{"ipv6 bits", Config{IPv6Bits: 129}, "ipv6_bits 129"},
		{"batch", Config{BatchElements: 1}, "batch_elements 1"},
		{"poll", Config{PollInterval: -1}, "poll_interval"},
		{"allowlist", Config{Allowlist: []netip.Prefix{{}}}, "allowlist prefix 1 is invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(tc.cfg, &fakeSource{}, nil, nil)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if p.cfg.Table == "" || p.cfg.IPv6Bits == 0 || p.cfg.BatchElements == 0 || len(p.cfg.Actions) == 0 {
					t.Errorf("defaults not filled: %+v", p.cfg)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("New error = %v, want %q", err, tc.wantErr)
			}
		})
	}
	if _, err := New(Config{}, nil, nil, nil); err == nil {
		t.Error("New with a nil source: no error")
	}
}

// fakeSource is a Source over a fixed list, for tests that never reach the
// kernel.
type fakeSource struct{ ms []mitigation.Mitigation }

func (f *fakeSource) Snapshot(time.Time) ([]mitigation.Mitigation, uint64) { return f.ms, 0 }
func (f *fakeSource) Changes(uint64) (a, d []mitigation.Mitigation, c uint64, ok bool) {
	return nil, nil, 0, true
}

func mit(id uint64, a mitigation.Action, name, value string, ttl time.Duration) mitigation.Mitigation {
	return mitigation.Mitigation{ID: id, Action: a, Scope: mitigation.Scope{{Name: name, Value: value}}, Expires: t0.Add(ttl)}
}

func TestClassify(t *testing.T) {
	allow := []netip.Prefix{netip.MustParsePrefix("2001:db8:aa::1/128")}
	for _, tc := range []struct {
		name string
		m    mitigation.Mitigation
		bits int
		want string // set:element, "" for not pushed
	}{
		{"v6 beside an allowlisted address", mit(1, mitigation.ActionFirewall, "ip.src", "2001:db8:aa::7", time.Hour), 64, "v6:2001:db8:aa::7"},
		{"v6 widened to /48 over it", mit(1, mitigation.ActionFirewall, "ip.src", "2001:db8:aa:1::7", time.Hour), 48, "v6:2001:db8:aa:1::7"},
		{"v6 elsewhere widened", mit(1, mitigation.ActionFirewall, "ip.src", "2001:db8:ab::7", time.Hour), 64, "v6net:2001:db8:ab::/64"},
		{"v4", mit(1, mitigation.ActionFirewall, "ip.src", "192.0.2.1", time.Hour), 64, "v4:192.0.2.1"},
		{"mapped", mit(1, mitigation.ActionFirewall, "ip.src", "::ffff:192.0.2.1", time.Hour), 64, "v4:192.0.2.1"},
		{"v6 as /64", mit(1, mitigation.ActionFirewall, "ip.src", "2001:db8::1", time.Hour), 64, "v6net:2001:db8::/64"},
		{"v6 alone", mit(1, mitigation.ActionFirewall, "ip.src", "2001:db8::1", time.Hour), 128, "v6:2001:db8::1"},
		{"prefix", mit(1, mitigation.ActionFirewall, "ip.src.prefix", "198.51.100.0/24", time.Hour), 64, "v4net:198.51.100.0/24"},
		{"mapped prefix", mit(1, mitigation.ActionFirewall, "ip.src.prefix", "::ffff:198.51.100.0/120", time.Hour), 64, "v4net:198.51.100.0/24"},
		{"v6 prefix", mit(1, mitigation.ActionFirewall, "ip.src.prefix", "2001:db8::/48", time.Hour), 128, "v6net:2001:db8::/48"},
		{"block not listed", mit(1, mitigation.ActionBlock, "ip.src", "192.0.2.1", time.Hour), 64, ""},
		{"other name", mit(1, mitigation.ActionFirewall, "tls.ja4", "t13d", time.Hour), 64, ""},
		{"bad value", mit(1, mitigation.ActionFirewall, "ip.src", "nope", time.Hour), 64, ""},
		{"two pairs", mitigation.Mitigation{Action: mitigation.ActionFirewall, Scope: mitigation.Scope{{Name: "ip.src", Value: "192.0.2.1"}, {Name: "http.path", Value: "/"}}}, 64, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Config{IPv6Bits: tc.bits, Allowlist: allow}.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			tg, ok := classify(tc.m, cfg)
			got := ""
			if ok {
				got = setNames[tg.set] + ":" + tg.addr.String()
				if tg.set.interval() {
					got = setNames[tg.set] + ":" + tg.pfx.String()
				}
			}
			if got != tc.want {
				t.Errorf("classify = %q, want %q", got, tc.want)
			}
		})
	}
}

// render writes a state as sorted "set element @expiry-minutes" lines.
func render(st state) []string {
	var out []string
	for i := range numSets {
		for s, e := range st[i] {
			out = append(out, fmt.Sprintf("%s %s @%d", setNames[i], s.format(i), int(e.exp.Sub(t0).Minutes())))
		}
	}
	slices.Sort(out)
	return out
}

func TestDesired(t *testing.T) {
	fw := mitigation.ActionFirewall
	for _, tc := range []struct {
		name string
		ms   []mitigation.Mitigation
		want []string
	}{
		{"empty", nil, nil},
		{"address and prefix", []mitigation.Mitigation{
			mit(1, fw, "ip.src", "192.0.2.1", time.Hour),
			mit(2, fw, "ip.src.prefix", "198.51.100.0/24", 2*time.Hour),
		}, []string{"v4 192.0.2.1 @60", "v4net 198.51.100.0/24 @120"}},
		{"same address twice: latest expiry", []mitigation.Mitigation{
			mit(1, fw, "ip.src", "192.0.2.1", time.Hour),
			mit(2, fw, "ip.src", "192.0.2.1", 3*time.Hour),
		}, []string{"v4 192.0.2.1 @180"}},
		{"expired left out", []mitigation.Mitigation{
			mit(1, fw, "ip.src", "192.0.2.1", -time.Minute),
		}, nil},
		{"nested shorter disappears", []mitigation.Mitigation{
			mit(1, fw, "ip.src.prefix", "10.0.0.0/8", time.Hour),
			mit(2, fw, "ip.src.prefix", "10.1.0.0/16", time.Minute),
		}, []string{"v4net 10.0.0.0/8 @60"}},
		{"nested longer splits", []mitigation.Mitigation{
			mit(1, fw, "ip.src.prefix", "10.0.0.0/8", time.Hour),
			mit(2, fw, "ip.src.prefix", "10.1.0.0/16", 2*time.Hour),
		}, []string{"v4net 10.0.0.0/16 @60", "v4net 10.1.0.0/16 @120", "v4net 10.2.0.0-10.255.255.255 @60"}},
		{"adjacent merge", []mitigation.Mitigation{
			mit(1, fw, "ip.src.prefix", "192.0.2.0/25", time.Hour),
			mit(2, fw, "ip.src.prefix", "192.0.2.128/25", time.Hour),
			mit(3, fw, "ip.src.prefix", "192.0.3.0/24", time.Hour),
		}, []string{"v4net 192.0.2.0/23 @60"}},
		{"adjacent of other expiry stay apart", []mitigation.Mitigation{
			mit(1, fw, "ip.src.prefix", "192.0.2.0/25", time.Hour),
			mit(2, fw, "ip.src.prefix", "192.0.2.128/25", 2*time.Hour),
		}, []string{"v4net 192.0.2.0/25 @60", "v4net 192.0.2.128/25 @120"}},
		{"covered address dropped, longer kept", []mitigation.Mitigation{
			mit(1, fw, "ip.src.prefix", "192.0.2.0/24", time.Hour),
			mit(2, fw, "ip.src", "192.0.2.1", time.Minute),
			mit(3, fw, "ip.src", "192.0.2.2", 2*time.Hour),
			mit(4, fw, "ip.src", "192.0.3.1", time.Minute),
		}, []string{"v4 192.0.2.2 @120", "v4 192.0.3.1 @1", "v4net 192.0.2.0/24 @60"}},
		{"to the end of the space", []mitigation.Mitigation{
			mit(1, fw, "ip.src.prefix", "255.255.255.0/24", time.Hour),
			mit(2, fw, "ip.src.prefix", "ffff::/16", time.Hour),
		}, []string{"v4net 255.255.255.0/24 @60", "v6net ffff::/16 @60"}},
		{"v6 /64s of one subscriber", []mitigation.Mitigation{
			mit(1, fw, "ip.src", "2001:db8::1", time.Hour),
			mit(2, fw, "ip.src", "2001:db8::2", 2*time.Hour),
			mit(3, fw, "ip.src", "2001:db8:0:1::2", 2*time.Hour),
		}, []string{"v6net 2001:db8::/63 @120"}}, // adjacent /64s of one expiry merge
	} {
		t.Run(tc.name, func(t *testing.T) {
			targets := map[uint64]target{}
			for _, m := range tc.ms {
				if tg, ok := classify(m, Config{Actions: []mitigation.Action{fw}, IPv6Bits: 64}); ok {
					targets[m.ID] = tg
				}
			}
			got := render(desired(targets, t0))
			if !slices.Equal(got, tc.want) {
				t.Errorf("desired =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestFlattenReference checks flatten against a per-address brute force on
// random prefixes inside 10.0.0.0/22: disjoint sorted output, each address
// with the latest expiry covering it, neighbours of one expiry merged.
func TestFlattenReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	base := netip.MustParseAddr("10.0.0.0")
	for round := range 300 {
		var in []ranged
		for range 1 + rng.IntN(12) {
			bits := 22 + rng.IntN(11)
			a := base.As4()
			off := rng.Uint32N(1 << 10)
			a[2] |= byte(off >> 8)
			a[3] = byte(off)
			p := netip.PrefixFrom(netip.AddrFrom4(a), bits).Masked()
			in = append(in, ranged{lo: p.Addr(), hi: lastAddr(p).Next(), exp: t0.Add(time.Duration(1+rng.IntN(4)) * time.Minute)})
		}
		ref := make([]time.Time, 1<<10)
		for _, r := range in {
			for a := r.lo; before(a, r.hi); a = a.Next() {
				i := int(a.As4()[2]&3)<<8 | int(a.As4()[3])
				if r.exp.After(ref[i]) {
					ref[i] = r.exp
				}
			}
		}
		out := flatten(slices.Clone(in))
		got := make([]time.Time, 1<<10)
		for j, r := range out {
			if !before(r.lo, r.hi) {
				t.Fatalf("round %d: empty range %v", round, r)
			}
			if j > 0 && before(r.lo, out[j-1].hi) {
				t.Fatalf("round %d: ranges overlap: %v %v", round, out[j-1], r)
			}
			if j > 0 && out[j-1].hi == r.lo && out[j-1].exp.Equal(r.exp) {
				t.Fatalf("round %d: neighbours of one expiry not merged: %v %v", round, out[j-1], r)
			}
			for a := r.lo; before(a, r.hi); a = a.Next() {
				got[int(a.As4()[2]&3)<<8|int(a.As4()[3])] = r.exp
			}
		}
		for i := range ref {
			if !got[i].Equal(ref[i]) {
				t.Fatalf("round %d: address %d expires %v, want %v (in %v, out %v)", round, i, got[i], ref[i], in, out)
			}
		}
	}
}

func TestDiff(t *testing.T) {
	a := span{lo: netip.MustParseAddr("192.0.2.1")}
	b := span{lo: netip.MustParseAddr("192.0.2.2")}
	c := span{lo: netip.MustParseAddr("192.0.2.3")}
	d := span{lo: netip.MustParseAddr("192.0.2.4")}
	want, have := newState(), newState()
	want[setV4][a] = elem{exp: t0.Add(time.Hour)}     // missing
	want[setV4][b] = elem{exp: t0.Add(2 * time.Hour)} // extended
	have[setV4][b] = elem{exp: t0.Add(time.Hour)}
	have[setV4][c] = elem{exp: t0.Add(time.Hour)}    // extra
	have[setV4][d] = elem{exp: t0.Add(-time.Second)} // expired in the kernel
	ops := diff(want, have, t0)
	var got []string
	for _, o := range ops {
		got = append(got, o.kind.String()+" "+o.s.format(o.set))
	}
	if w := []string{"delete 192.0.2.3", "replace 192.0.2.2"}; !slices.Equal(got[:2], w) {
		t.Errorf("ops = %q, want deletions first: %q then add 192.0.2.1", got, w)
	}
	if len(got) != 3 || got[2] != "add 192.0.2.1" {
		t.Errorf("ops = %q", got)
	}
	if _, ok := have[setV4][d]; ok {
		t.Error("expired element kept in have")
	}
}

func TestSplitList(t *testing.T) {
	var els []nftables.SetElement
	for i := range 6000 {
		p := benchPrefix(i)
		els = append(els,
			nftables.SetElement{Key: p.Addr().AsSlice(), Timeout: time.Hour},
			nftables.SetElement{Key: lastAddr(p).Next().AsSlice(), IntervalEnd: true})
	}
	parts := splitList(els)
	if len(parts) < 2 {
		t.Fatalf("%d elements in %d part", len(els), len(parts))
	}
	var joined []nftables.SetElement
	for i, part := range parts {
		size := 0
		for _, e := range part {
			size += elementBytes(e)
		}
		if size > maxListBytes {
			t.Errorf("part %d: %d bytes", i, size)
		}
		if part[0].IntervalEnd {
			t.Errorf("part %d starts with an interval end", i)
		}
		joined = append(joined, part...)
	}
	if len(joined) != len(els) {
		t.Errorf("parts hold %d elements, want %d", len(joined), len(els))
	}
}

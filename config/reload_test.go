package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestReload(t *testing.T) {
	old, _ := Parse("a.yml", []byte("decision:\n  listen: 127.0.0.1:1\nrules:\n  paranoia: 1\nfleet:\n  node: a\n  redis: {addresses: [127.0.0.1:1]}\n"))
	next, _ := Parse("a.yml", []byte("decision:\n  listen: 127.0.0.1:2\n  loops: 2\nrules:\n  paranoia: 2\nfleet:\n  node: b\n  redis: {addresses: [127.0.0.1:1]}\n"))
	var got, prepared *Config
	rep := Reload([]Reloader{
		{Name: "rules", Live: []string{"rules"}, Prepare: func(n *Config) error { prepared = n; return nil }, Apply: func(_, n *Config) error { got = n; return nil }},
		{Name: "decision", Live: []string{"decision.loops"}, Restart: []string{"decision"}, Apply: func(_, _ *Config) error { return nil }},
		{Name: "fleet", Restart: []string{"fleet"}},
		{Name: "firewall", Apply: func(o, n *Config) error { return NeedsRestart("mitigation.allowlist.cidrs") }},
		{Name: "broken", Apply: func(_, _ *Config) error { return errors.New("boom") }},
	}, old, old, next)
	if got == nil || got != prepared || got != rep.Config || rep.OK() {
		t.Fatalf("report %+v", rep)
	}
	if !slices.Equal(rep.Applied, []string{"rules"}) {
		t.Errorf("applied = %q", rep.Applied)
	}
	want := []string{"decision: decision.listen: needs a restart", "fleet: fleet.node: needs a restart", "firewall: mitigation.allowlist.cidrs: needs a restart"}
	if !slices.Equal(rep.Restart, want) {
		t.Errorf("restart = %q, want %q", rep.Restart, want)
	}
	if want := []string{"decision.listen", "fleet.node", "mitigation.allowlist.cidrs"}; !slices.Equal(rep.Pending, want) {
		t.Errorf("pending = %q, want %q", rep.Pending, want)
	}
	if len(rep.Failed) != 1 || rep.Failed[0].Error() != "broken: boom" {
		t.Errorf("failed = %v", rep.Failed)
	}
	// The parts waiting for a restart keep their running values; the
	// rest is the new configuration; next itself is left as it was read.
	c := rep.Config
	if c.Decision.Listen != "127.0.0.1:1" || c.Decision.Loops != 2 || c.Rules.Paranoia != 2 || c.Fleet.Node != "a" {
		t.Errorf("in force: listen %s loops %d paranoia %d node %s; want 127.0.0.1:1, 2, 2, a", c.Decision.Listen, c.Decision.Loops, c.Rules.Paranoia, c.Fleet.Node)
	}
	if next.Fleet.Node != "b" || next.Decision.Listen != "127.0.0.1:2" || c.Fleet == next.Fleet {
		t.Errorf("the new configuration was changed: %+v", next.Fleet)
	}

	// A key live for one component and start-only for another takes
	// effect where it can, and stays pending at the next reload; a key put
	// back to its start value is no longer pending.
	shared := []Reloader{{Name: "rules", Live: []string{"rules"}}, {Name: "fleet", Restart: []string{"rules.paranoia", "decision.listen"}}}
	r1 := Reload(shared, old, old, next)
	r2 := Reload(shared, old, r1.Config, next)
	if r1.Config.Rules.Paranoia != 2 || !slices.Equal(r2.Pending, []string{"rules.paranoia", "decision.listen"}) || r2.Config.Decision.Listen != "127.0.0.1:1" {
		t.Errorf("second reload: pending %q, paranoia %d, listen %s", r2.Pending, r1.Config.Rules.Paranoia, r2.Config.Decision.Listen)
	}
	if r3 := Reload(shared, old, r2.Config, old); len(r3.Pending) != 0 || !r3.OK() {
		t.Errorf("put back: %+v", r3)
	}

	// A failed Prepare applies nothing and discards what was prepared.
	discarded, applied := false, false
	rep = Reload([]Reloader{
		{Name: "rules", Prepare: func(*Config) error { return nil }, Discard: func() { discarded = true }, Apply: func(_, _ *Config) error { applied = true; return nil }},
		{Name: "bad", Prepare: func(*Config) error { return errors.New("no") }},
	}, old, old, next)
	if applied || !discarded || rep.Config != nil || len(rep.Failed) != 1 {
		t.Errorf("failed prepare: applied %v discarded %v report %+v", applied, discarded, rep)
	}
}

func TestDiff(t *testing.T) {
	parse := func(s string) *Config {
		c, err := Parse("d.yml", []byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	base := parse("crowdsec: {listen: 127.0.0.1:1}\n")
	for _, tc := range []struct {
		name, yml, path string
		want            []string
	}{
		{"same", "crowdsec: {listen: 127.0.0.1:1}\n", "", nil},
		{"fleet added", "crowdsec: {listen: 127.0.0.1:1}\nfleet: {redis: {addresses: [127.0.0.1:1]}}\n", "", []string{"fleet"}},
		{"inline field", "crowdsec: {listen: 127.0.0.1:1, history: 3}\n", "crowdsec", []string{"crowdsec.history"}},
		{"listen", "crowdsec: {listen: 127.0.0.1:2}\n", "crowdsec", []string{"crowdsec.listen"}},
		{"outside the path", "crowdsec: {listen: 127.0.0.1:2}\n", "blocklist", nil},
		{"leaf under a nil section", "crowdsec: {listen: 127.0.0.1:1}\nfleet: {node: x, redis: {addresses: [127.0.0.1:1]}}\n", "fleet.node", []string{"fleet.node"}},
		{"list", "crowdsec: {listen: 127.0.0.1:1}\nshadowban: {routes: [{path: /a}]}\n", "", []string{"shadowban.routes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Diff(base, parse(tc.yml), tc.path); !slices.Equal(got, tc.want) {
				t.Errorf("Diff = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFields(t *testing.T) {
	fs := Fields()
	for _, want := range []string{"fleet.node", "fleet.redis.addresses", "crowdsec.listen", "shadowban.routes", "counting.max_keys", "firewall.nftables.table"} {
		if !slices.Contains(fs, want) {
			t.Errorf("Fields lacks %s", want)
		}
	}
	for _, f := range fs {
		if !IsKey(f) || strings.Contains(f, "..") || strings.HasPrefix(f, "file") {
			t.Errorf("Fields: bad key %q", f)
		}
	}
	if IsKey("fleet.nodes") || IsKey("fle") {
		t.Error("IsKey accepts what is no key")
	}
}

package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/guardd/guardd/mitigation"
)

// badConfigs holds, per testdata/*.bad.yml, what its error must contain: the
// file and line come first, so each names the exact line of the bad key or
// value.
var badConfigs = map[string]string{
	"unknown-key.bad.yml":       "unknown-key.bad.yml:3: field rulez not found",
	"nested-unknown.bad.yml":    "nested-unknown.bad.yml:3: decision.shed_afterr: field shed_afterr not found",
	"bad-proxy.bad.yml":         `bad-proxy.bad.yml:4: characteristics.trusted_proxies[1]: "not-an-address": want a CIDR or an address`,
	"bad-proxy-flow.bad.yml":    `bad-proxy-flow.bad.yml:4: characteristics.trusted_proxies[1]: "bogus"`,
	"bad-allow.bad.yml":         `bad-allow.bad.yml:4: mitigation.allowlist.values.ip.dst: unknown characteristic "ip.dst"`,
	"no-rules.bad.yml":          "no-rules.bad.yml:1: rules: builtin disabled and no dirs given: there would be no rules",
	"bad-type.bad.yml":          "bad-type.bad.yml:2: counting.max_keys: cannot unmarshal",
	"bad-loops.bad.yml":         "bad-loops.bad.yml:2: decision.loops: 65",
	"bad-action.bad.yml":        `bad-action.bad.yml:4: firewall.nftables.actions[1]: "nuke"`,
	"negative-duration.bad.yml": "negative-duration.bad.yml:4: sources.nginx.poll_interval: -1s: want a positive duration",
	"negative-nested.bad.yml":   "negative-nested.bad.yml:4: blocklist.nginx_geo.poll_interval: -5s",
	"duration-int.bad.yml":      "duration-int.bad.yml:2: rules.eval_timeout: cannot unmarshal",
	"syntax.bad.yml":            "syntax.bad.yml:3: found a tab character",
	"fleet-mode.bad.yml":        `fleet-mode.bad.yml:5: fleet.redis.mode: counting/redis: unknown mode "ring"; expect 'standalone', 'sentinel' or 'cluster'`,
	"fleet-sentinel.bad.yml":    "fleet-sentinel.bad.yml:2: fleet.redis: counting/redis: sentinel mode needs master_name",
	"login-relative.bad.yml":    `login-relative.bad.yml:5: rules.login_paths[2]: "account/signin": want /path, /prefix/* or */end (a path starts with /)`,
	"login-empty.bad.yml":       "login-empty.bad.yml:4: rules.login_paths[1]: empty path",
	"bad-resolver.bad.yml":      `bad-resolver.bad.yml:3: characteristics.resolver: "127.0.0.1": want host:port`,
}

func TestConfigFiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.yml")
	if len(files) == 0 {
		t.Fatal("no test configs")
	}
	seen := 0
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			cfg, err := Load(f)
			if strings.HasSuffix(name, ".good.yml") {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			want, ok := badConfigs[name]
			if !ok {
				t.Fatalf("no expected error for %s", name)
			}
			seen++
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error = %v (config %+v)\nwant it to contain %q", err, cfg, want)
			}
		})
	}
	if seen != len(badConfigs) {
		t.Errorf("%d bad configs tested, %d expected", seen, len(badConfigs))
	}
}

func TestDefaults(t *testing.T) {
	for _, src := range []string{"", "\n", "decision:\nadmin:\nmitigation:\n"} {
		cfg, err := Parse("t.yml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Decision.Listen != DefaultDecisionListen || cfg.Admin.Listen != DefaultAdminListen ||
			cfg.Mitigation.StateDir != DefaultStateDir || cfg.Log.Format != "combined" || cfg.Rules.DisableBuiltin {
			t.Errorf("%q: defaults = %+v", src, cfg)
		}
	}
}

func TestTypedValues(t *testing.T) {
	cfg, err := Load("testdata/full.good.yml")
	if err != nil {
		t.Fatal(err)
	}
	got := Prefixes(cfg.Characteristics.TrustedProxies)
	if len(got) != 3 || got[0].String() != "10.0.0.0/8" || got[2].String() != "192.0.2.1/32" {
		t.Errorf("trusted proxies = %v", got)
	}
	if cfg.Decision.ShedAfter != 50*time.Millisecond || cfg.Rules.EvalTimeout != 5*time.Millisecond {
		t.Errorf("durations = %v %v", cfg.Decision.ShedAfter, cfg.Rules.EvalTimeout)
	}
	a, err := cfg.Allowlist()
	if err != nil || len(a.Prefixes) != 1 || len(a.Values) != 2 {
		t.Errorf("allowlist = %+v, %v", a, err)
	}
	if cfg.Line("decision.loops") != 22 {
		t.Errorf("decision.loops on line %d, want 22", cfg.Line("decision.loops"))
	}
}

func TestFirewallConfig(t *testing.T) {
	cfg, err := Parse("t.yml", []byte("firewall:\n  nftables:\n    table: filter\n    sets_only: true\n    actions: [block, firewall]\n    ipv6_bits: 56\n"))
	if err != nil {
		t.Fatal(err)
	}
	pc, ok := cfg.NFTables()
	if !ok || pc.Table != "filter" || !pc.SetsOnly || len(pc.Actions) != 2 || pc.Actions[1] != mitigation.ActionFirewall || pc.IPv6Bits != 56 {
		t.Fatalf("pusher config %+v", pc)
	}
	// An empty section turns the component on with its defaults.
	cfg, err = Parse("t.yml", []byte("firewall:\n  nftables:\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.NFTables(); !ok {
		t.Error("empty firewall.nftables: section left nftables off")
	}
	if _, ok := Default().NFTables(); ok {
		t.Error("nftables on by default")
	}
}

func TestWarnings(t *testing.T) {
	for _, tc := range []struct {
		listen string
		warn   bool
	}{
		{"127.0.0.1:9481", false},
		{"[::1]:9481", false},
		{"localhost:9481", false},
		{"0.0.0.0:9481", true},
		{":9481", true},
		{"192.0.2.10:9481", true},
		{"[2001:db8::1]:9481", true},
	} {
		cfg, err := Parse("t.yml", []byte("admin:\n  listen: \""+tc.listen+"\"\n"))
		if err != nil {
			t.Fatal(err)
		}
		w := cfg.Warnings()
		if (len(w) > 0) != tc.warn || (tc.warn && !strings.Contains(w[0], "admin.listen")) {
			t.Errorf("%s: warnings %q", tc.listen, w)
		}
	}
}

func TestReload(t *testing.T) {
	old, _ := Parse("a.yml", []byte("decision:\n  listen: 127.0.0.1:1\n"))
	next, _ := Parse("a.yml", []byte("decision:\n  listen: 127.0.0.1:2\n"))
	var got *Config
	rep := Reload([]Reloader{
		{Name: "rules", Apply: func(_, n *Config) error { got = n; return nil }},
		{Name: "decision", Apply: func(o, n *Config) error {
			if o.Decision.Listen != n.Decision.Listen {
				return NeedsRestart("decision.listen")
			}
			return nil
		}},
		{Name: "broken", Apply: func(_, _ *Config) error { return errors.New("boom") }},
	}, old, next)
	if got != next || len(rep.Applied) != 1 || rep.OK() {
		t.Fatalf("report %+v", rep)
	}
	if len(rep.Restart) != 1 || rep.Restart[0] != "decision: decision.listen: needs a restart" {
		t.Errorf("restart = %q", rep.Restart)
	}
	if len(rep.Failed) != 1 || rep.Failed[0].Error() != "broken: boom" {
		t.Errorf("failed = %v", rep.Failed)
	}
}

// FuzzParse: any bytes give a valid config or an error naming the file,
// never a panic.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yml")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		cfg, err := Parse("f.yml", data)
		if err != nil {
			if !strings.Contains(err.Error(), "f.yml") {
				t.Fatalf("error without the file: %v", err)
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("parsed config fails Validate: %v", err)
		}
		if _, err := cfg.Allowlist(); err != nil {
			t.Fatalf("validated config has a bad allowlist: %v", err)
		}
	})
}

func TestInputsOutputs(t *testing.T) {
	for _, tc := range []struct {
		name, src    string
		inputs, outs []string
	}{
		{"empty", "", []string{"no nginx logs (sources.nginx.paths is empty: guardd run refuses this)"},
			[]string{"decision API on " + DefaultDecisionListen, "admin API on " + DefaultAdminListen}},
		{"all", "sources:\n  nginx:\n    paths: [/a.log, /b.log]\nfingerprint:\n  interfaces: [lo]\ncrowdsec:\n  listen: 127.0.0.1:9482\nfirewall:\n  nftables:\n",
			[]string{"nginx logs /a.log, /b.log", "capture on lo"},
			[]string{"decision API on " + DefaultDecisionListen, "admin API on " + DefaultAdminListen, "CrowdSec bouncer API on 127.0.0.1:9482", "nftables table guardd"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse("t.yml", []byte(tc.src))
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Inputs(); !slices.Equal(got, tc.inputs) {
				t.Errorf("Inputs() = %q, want %q", got, tc.inputs)
			}
			if got := cfg.Outputs(); !slices.Equal(got, tc.outs) {
				t.Errorf("Outputs() = %q, want %q", got, tc.outs)
			}
		})
	}
}

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
	"unknown-key.bad.yml":          `unknown key "rulez" at testdata/unknown-key.bad.yml:3; did you mean "rules"?`,
	"nested-unknown.bad.yml":       `unknown key "decision.shed_afterr" at testdata/nested-unknown.bad.yml:3; did you mean "decision.shed_after"?`,
	"typo-top.bad.yml":             `unknown key "decison" at testdata/typo-top.bad.yml:3; did you mean "decision"?`,
	"typo-deep.bad.yml":            `unknown key "mitigation.allowlist.cidrz" at testdata/typo-deep.bad.yml:3; did you mean "mitigation.allowlist.cidrs"?`,
	"typo-fleet.bad.yml":           `unknown key "fleet.redis.adresses" at testdata/typo-fleet.bad.yml:3; did you mean "fleet.redis.addresses"?`,
	"typo-list.bad.yml":            `unknown key "shedding.classes[0].rulez" at testdata/typo-list.bad.yml:4; did you mean "shedding.classes[0].rules"?`,
	"wrong-section.bad.yml":        `unknown key "state_dir" at testdata/wrong-section.bad.yml:1; did you mean "mitigation.state_dir"?`,
	"unknown-inline.bad.yml":       `unknown key "crowdsec.zzzzzz" at testdata/unknown-inline.bad.yml:3; accepted here: history, listen, max_bouncers, scopes, types`,
	"scalar-section.bad.yml":       `scalar-section.bad.yml:1: decision: "5": want a section of keys (key: value lines)`,
	"scalar-list.bad.yml":          `scalar-list.bad.yml:2: rules.dirs: "/etc/gu...": want a list`,
	"bad-bool.bad.yml":             `bad-bool.bad.yml:3: decision.count: "3": want true or false`,
	"bad-proxy.bad.yml":            `bad-proxy.bad.yml:4: characteristics.trusted_proxies[1]: "not-an-address": want a CIDR or an address`,
	"bad-proxy-flow.bad.yml":       `bad-proxy-flow.bad.yml:4: characteristics.trusted_proxies[1]: "bogus"`,
	"bad-allow.bad.yml":            `bad-allow.bad.yml:4: mitigation.allowlist.values.ip.dst: unknown characteristic "ip.dst"`,
	"no-rules.bad.yml":             "no-rules.bad.yml:1: rules: builtin disabled and no dirs given: there would be no rules",
	"bad-type.bad.yml":             `bad-type.bad.yml:2: counting.max_keys: "lots": want a whole number`,
	"bad-loops.bad.yml":            "bad-loops.bad.yml:2: decision.loops: 65",
	"bad-action.bad.yml":           `bad-action.bad.yml:4: firewall.nftables.actions[1]: "nuke"`,
	"negative-duration.bad.yml":    "negative-duration.bad.yml:4: sources.nginx.poll_interval: -1s: want a positive duration",
	"negative-nested.bad.yml":      "negative-nested.bad.yml:4: blocklist.nginx_geo.poll_interval: -5s",
	"duration-int.bad.yml":         `duration-int.bad.yml:2: rules.eval_timeout: "5": want a duration such as 30s, 5m or 1h`,
	"syntax.bad.yml":               "syntax.bad.yml:3: found a tab character",
	"fleet-mode.bad.yml":           `fleet-mode.bad.yml:5: fleet.redis.mode: counting/redis: unknown mode "ring"; expect 'standalone', 'sentinel' or 'cluster'`,
	"fleet-sentinel.bad.yml":       "fleet-sentinel.bad.yml:2: fleet.redis: counting/redis: sentinel mode needs master_name",
	"login-relative.bad.yml":       `login-relative.bad.yml:5: rules.login_paths[2]: "account/signin": want /path, /prefix/* or */end (a path starts with /)`,
	"login-empty.bad.yml":          "login-empty.bad.yml:4: rules.login_paths[1]: empty path",
	"syslog-listen.bad.yml":        `syslog-listen.bad.yml:5: sources.syslog.listen[1]: "unix:/run/guardd/nginx.sock": want "unixgram:/path/to.sock", "udp:ADDRESS:PORT" or "tcp:ADDRESS:PORT"`,
	"paranoia.bad.yml":             "paranoia.bad.yml:2: rules.paranoia: paranoia 5: want 1 (the default",
	"challenge-difficulty.bad.yml": "challenge-difficulty.bad.yml:2: challenge.difficulty: 40: want 1 to 28",
	"challenge-cookie.bad.yml":     `challenge-cookie.bad.yml:3: challenge.cookie: "bad cookie"`,
	"bad-resolver.bad.yml":         `bad-resolver.bad.yml:3: characteristics.resolver: "127.0.0.1": want host:port`,
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
			// The operator's words, never Go's.
			for _, gone := range []string{"not found in type", "cannot unmarshal", "config.", "time.Duration", "!!"} {
				if strings.Contains(err.Error(), gone) {
					t.Errorf("error %q speaks Go: %q", err, gone)
				}
			}
		})
	}
	if seen != len(badConfigs) {
		t.Errorf("%d bad configs tested, %d expected", seen, len(badConfigs))
	}
}

// TestUnknownKeys: every unknown key is reported, each with its line, not
// only the first.
func TestUnknownKeys(t *testing.T) {
	_, err := Parse("guardd.yaml", []byte("decison:\n  listen: x\nadmin:\n  lissen: y\n  token_file: z\n"))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`unknown key "decison" at guardd.yaml:1; did you mean "decision"?`,
		`unknown key "admin.lissen" at guardd.yaml:4; did you mean "admin.listen"?`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\nwant it to contain %q", err, want)
		}
	}
	var ue *UnknownKeyError
	if !errors.As(err, &ue) || ue.Line != 1 || ue.Path != "decison" {
		t.Errorf("errors.As = %+v", ue)
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"decison", "decision", 1}, {"decsiion", "decision", 1}, {"rulez", "rules", 1},
		{"", "abc", 3}, {"abc", "abc", 0}, {"shed_afterr", "shed_after", 1}, {"log", "fleet", 4},
	} {
		if got := editDistance(c.a, c.b); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
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
		{"empty", "", []string{"no access logs (sources.nginx.paths, sources.syslog.listen and sources.stdin are all empty: guardd run refuses this)"},
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

func TestPlainTypeError(t *testing.T) {
	for in, want := range map[string]string{
		"field rulez not found in type config.Config":        `unknown key "rulez"`,
		"cannot unmarshal !!str `lots` into int":             `"lots": want a whole number`,
		"cannot unmarshal !!seq into time.Duration":          "cannot unmarshal !!seq into time.Duration", // not yaml's form with a value: as is
		"cannot unmarshal !!map `x` into []string":           "a section of keys: want a list",
		"cannot unmarshal !!str `y` into config.FleetConfig": `"y": want a section of keys (key: value lines)`,
	} {
		if got := plainTypeError(in); got != want {
			t.Errorf("plainTypeError(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestChallengeConfig(t *testing.T) {
	cfg, err := Load("testdata/challenge.good.yml")
	if err != nil {
		t.Fatal(err)
	}
	if ch := cfg.Challenge; ch.Difficulty != 18 || ch.MaxUnsolved != 3 || ch.ClearanceTTL != 12*time.Hour || cfg.ChallengeKeyFile() != "/etc/guardd/challenge.key" {
		t.Errorf("challenge = %+v, key file %s", ch, cfg.ChallengeKeyFile())
	}
	if def := Default(); def.ChallengeKeyFile() != DefaultStateDir+"/challenge.key" {
		t.Errorf("default key file %s", def.ChallengeKeyFile())
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigFiles(t *testing.T) {
	bad := map[string]string{
		"unknown-key.bad.yml": "line 3: field rulez not found",
		"bad-proxy.bad.yml":   `characteristics.trusted_proxies[1]: "not-an-address"`,
		"bad-allow.bad.yml":   `unknown characteristic "ip.dst"`,
		"no-rules.bad.yml":    "there would be no rules",
		"bad-type.bad.yml":    "line 2: cannot unmarshal",
		"bad-loops.bad.yml":   "decision.loops: 65",
	}
	files, _ := filepath.Glob("testdata/config/*.yml")
	if len(files) == 0 {
		t.Fatal("no test configs")
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			cfg, err := loadConfig(f)
			if strings.HasSuffix(name, ".good.yml") {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := cfg.allowlist(); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, ok := bad[name]
			if !ok {
				t.Fatalf("no expected error for %s", name)
			}
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), name) {
				t.Fatalf("error = %v, want it to name the file and contain %q", err, want)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	cfg, err := loadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Rules.DisableBuiltin || cfg.Log.Format != "" {
		t.Errorf("defaults = %+v", cfg)
	}
}

// FuzzConfig: any bytes give a config or an error, never a panic.
func FuzzConfig(f *testing.F) {
	files, _ := filepath.Glob("testdata/config/*.yml")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		var cfg Config
		if err := decodeConfig(data, &cfg); err == nil {
			if _, err := cfg.allowlist(); err != nil {
				t.Fatalf("validated config has a bad allowlist: %v", err)
			}
		}
	})
}

func TestFirewallConfig(t *testing.T) {
	var cfg Config
	err := decodeConfig([]byte("firewall:\n  nftables:\n    table: filter\n    sets_only: true\n    actions: [block, firewall]\n    ipv6_bits: 56\n"), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := cfg.pusherConfig()
	if err != nil || pc.Table != "filter" || !pc.SetsOnly || len(pc.Actions) != 2 || pc.IPv6Bits != 56 {
		t.Fatalf("pusher config %+v, %v", pc, err)
	}
	if err := decodeConfig([]byte("firewall:\n  nftables:\n    actions: [nuke]\n"), &cfg); err == nil || !strings.Contains(err.Error(), "firewall.nftables.actions[0]") {
		t.Fatalf("bad action: %v", err)
	}
}

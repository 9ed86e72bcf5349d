package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/rules"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules")
	os.MkdirAll(rules, 0o755)
	os.WriteFile(filepath.Join(rules, "login.rego"), []byte(testRule), 0o644)
	badRules := filepath.Join(dir, "bad")
	os.MkdirAll(badRules, 0o755)
	os.WriteFile(filepath.Join(badRules, "bad.rego"), []byte("package guardd.rules.bad\ncount if {"), 0o644)
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	good := write("good.yaml", "sources: {nginx: {paths: [/nonexistent/access.log]}}\nrules: {dirs: ["+rules+"]}\ncrowdsec: {listen: 127.0.0.1:9482}\n")
	for _, c := range []struct {
		name string
		args []string
		rc   int
		out  []string
	}{
		{"good", []string{"--config", good}, 0, []string{good + ": ok", "test_login", "login_bruteforce", "inputs: nginx logs /nonexistent/access.log", "CrowdSec bouncer API on 127.0.0.1:9482", "warning: sources.nginx.paths: nothing matches"}},
		{"fleet names the rules counted per node", []string{write("fleet.yaml", "sources: {nginx: {paths: [/x]}}\nfleet: {node: a, redis: {addresses: [\"127.0.0.1:1\"]}}\n")}, 0,
			[]string{"fleet: counted on each node alone, not fleet-wide:", "regular_scraping (regularity)"}},
		{"good, file as argument", []string{good}, 0, []string{good + ": ok"}},
		{"unknown key names its line", []string{"--config", write("unknown.yaml", "sources: {nginx: {paths: [/x]}}\nadmn:\n  listen: x\n")}, 1, []string{`unknown key "admn" at `, `unknown.yaml:2; did you mean "admin"?`}},
		{"bad rule", []string{"--config", write("badrule.yaml", "sources: {nginx: {paths: [/x]}}\nrules: {dirs: ["+badRules+"]}\n")}, 1, []string{"bad.rego:"}},
		{"missing file", []string{"--config", filepath.Join(dir, "nope.yaml")}, 1, []string{"nope.yaml"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			rc := runCheck(c.args, &out, &errb)
			all := out.String() + errb.String()
			if rc != c.rc {
				t.Fatalf("exit %d, want %d:\n%s", rc, c.rc, all)
			}
			for _, w := range c.out {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q:\n%s", w, all)
				}
			}
		})
	}
}

func TestPerNodeRules(t *testing.T) {
	rs := []*rules.Rule{
		{Name: "one_limit", Windows: []rules.Window{{}}},
		{Name: "two_windows", Windows: []rules.Window{{}, {}}},                                               // fleet-wide: a Counter per window
		{Name: "scan", Distinct: &characteristics.Characteristic{}, Windows: []rules.Window{{}}},             // fleet-wide: its sketches are shared
		{Name: "scan_windows", Distinct: &characteristics.Characteristic{}, Windows: []rules.Window{{}, {}}}, // in every window
		{Name: "in_flight", Concurrency: 4},
		{Name: "regular", Windows: []rules.Window{{}}, Regularity: &rules.Regularity{MinEvents: 20, MaxCV: 0.2}},
	}
	got := strings.Join(perNodeRules(rs), ", ")
	if want := "in_flight (concurrency), regular (regularity)"; got != want {
		t.Errorf("perNodeRules = %q, want %q", got, want)
	}
}

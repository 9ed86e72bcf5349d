package main

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestExplain(t *testing.T) {
	dir := t.TempDir()
	td := startDaemon(t, dir)
	defer td.stop(t)
	now := time.Now()
	for i := range 3 {
		td.appendLines(t, logLine("203.0.113.7", "/login", 401, now.Add(time.Duration(i)*time.Second)))
	}
	td.waitFor(t, "three lines counted", func() bool {
		for _, r := range td.d.explain(netip.MustParseAddr("203.0.113.7")).(explainJSON).Rules {
			if r.Rule == "test_login" && r.Count >= 3 {
				return true
			}
		}
		return false
	})
	explain := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if rc := runExplain(append(args, clientArgs(td)...), &out, &errb); rc != 0 {
			t.Fatalf("guardd explain %v: %d %s", args, rc, errb.String())
		}
		return out.String()
	}
	out := explain("203.0.113.7")
	for _, want := range []string{"203.0.113.7 is not mitigated.", "test_login", "3.0", "60%"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain lacks %q:\n%s", want, out)
		}
	}
	cli(t, append([]string{"add", "--scope", "ip.src.prefix=203.0.113.0/24", "--reason", "abuse"}, clientArgs(td)...)...)
	out = explain("--json", "203.0.113.7")
	for _, want := range []string{`"address":"203.0.113.7"`, `"rule":"manual: abuse"`, `"rule":"test_login"`, `"count":3`, `"limit":5`, `"period_seconds":60`, `"ratio":0.6`} {
		if !strings.Contains(out, want) {
			t.Errorf("explain --json lacks %s:\n%s", want, out)
		}
	}
	if out := explain("203.0.113.7"); !strings.Contains(out, "is mitigated:\n  block by manual: abuse") {
		t.Errorf("explain of a mitigated client:\n%s", out)
	}
	var errb bytes.Buffer
	if rc := runExplain(append([]string{"not-an-ip"}, clientArgs(td)...), &bytes.Buffer{}, &errb); rc != 2 {
		t.Errorf("bad address: exit %d", rc)
	}
}

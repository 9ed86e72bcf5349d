package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/guardd/guardd/mitigation/admin"
)

// clientArgs are the flags that point the CLI at td, given after the verb's
// arguments as an operator may type them.
func clientArgs(td *testDaemon) []string {
	return []string{"--admin", td.d.adminLn.Addr().String(), "--token-file", filepath.Join(td.dir, "state", "admin.token")}
}

func cli(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if rc := runDecisions(args, &out, &errb); rc != 0 {
		t.Fatalf("guardd decisions %s: exit %d: %s", strings.Join(args, " "), rc, errb.String())
	}
	return out.String()
}

// TestDecisionsImportExport round-trips 100,000 decisions (2,000 with -short)
// through the CLI and the bulk endpoint of two real daemons: a list of
// addresses and CIDRs in, JSON lines out, those JSON lines into a fresh
// daemon, and CSV out of it, which must hold the same mitigations. The time is
// measured by BenchmarkDecisionsRoundTrip, not here.
func TestDecisionsImportExport(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 2_000
	}
	dir := t.TempDir()
	list := filepath.Join(dir, "bad.txt")
	writeAddressList(t, list, n)
	a := startDaemon(t, filepath.Join(dir, "a"))
	defer a.stop(t)
	roundTrip(t, a, dir, list, n)
}

func writeAddressList(t testing.TB, path string, n int) {
	var b strings.Builder
	b.WriteString("# addresses from a feed\n")
	for i := range n - 1 {
		fmt.Fprintf(&b, "10.%d.%d.%d\n", i>>16&0xff, i>>8&0xff, i&0xff)
	}
	b.WriteString("2001:db8:7::/48   # a network\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func roundTrip(t testing.TB, a *testDaemon, dir, list string, n int) {
	run := func(args ...string) string {
		var out, errb bytes.Buffer
		if rc := runDecisions(args, &out, &errb); rc != 0 {
			t.Fatalf("guardd decisions %s: exit %d: %s", strings.Join(args, " "), rc, errb.String())
		}
		return out.String()
	}
	if got := run(append([]string{"import", list, "--duration", "2h", "--action", "firewall", "--rule", "feed"}, clientArgs(a)...)...); got != fmt.Sprintf("imported %d mitigations\n", n) {
		t.Fatalf("import said %q", got)
	}
	if a.d.store.Len() != n {
		t.Fatalf("daemon holds %d, want %d", a.d.store.Len(), n)
	}
	jsonl := filepath.Join(dir, "export.jsonl")
	run(append([]string{"export", jsonl}, clientArgs(a)...)...)

	b := startDaemon(t, filepath.Join(dir, fmt.Sprint("b", time.Now().UnixNano())))
	defer b.stop(t)
	run(append([]string{"import", jsonl}, clientArgs(b)...)...)
	csvPath := filepath.Join(dir, "export.csv")
	run(append([]string{"export", csvPath}, clientArgs(b)...)...)

	want, got := a.d.store.List(time.Now()), b.d.store.List(time.Now())
	if len(got) != len(want) {
		t.Fatalf("second daemon holds %d, want %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if !g.Scope.Equal(w.Scope) || g.Action != w.Action || g.Rule != "feed" || !g.Expires.Equal(w.Expires) {
			t.Fatalf("#%d: %+v, want %+v", i, g, w)
		}
	}
	csvData, _ := os.ReadFile(csvPath)
	if lines := bytes.Count(csvData, []byte("\n")); lines != n+1 || !bytes.Contains(csvData, []byte(`"{""ip.src.prefix"":""2001:db8:7::/48""}"`)) {
		t.Fatalf("csv export has %d lines, want %d, or lacks the prefix", lines, n+1)
	}
}

// TestDecisionsFlagsAfterArguments: --config (and every flag) may follow the
// arguments, and the configuration's admin address and token file are used.
func TestDecisionsFlagsAfterArguments(t *testing.T) {
	dir := t.TempDir()
	td := startDaemon(t, dir)
	defer td.stop(t)
	client := filepath.Join(dir, "client.yaml")
	os.WriteFile(client, []byte(fmt.Sprintf("admin: {listen: %q, token_file: %q}\n", td.d.adminLn.Addr().String(), filepath.Join(dir, "state", "admin.token"))), 0o644)
	out := cli(t, "add", "--scope", "ip.src=203.0.113.7", "--config", client)
	var id int
	if _, err := fmt.Sscanf(out, "added %d:", &id); err != nil {
		t.Fatalf("add said %q", out)
	}
	if out := cli(t, "list", "--json", "--config", client); !strings.Contains(out, `{"id":`+fmt.Sprint(id)+`,"rule":"manual","action":"block","scope":{"ip.src":"203.0.113.7"}`) {
		t.Fatalf("list --json: %s", out)
	}
	cli(t, "delete", fmt.Sprint(id), "--config", client)
	if td.d.store.Len() != 0 {
		t.Fatal("delete with --config after the ID did not delete")
	}
}

// BenchmarkDecisionsRoundTrip: import 100,000 addresses through the CLI and
// export them again (one daemon), the target being well under 10 s.
func BenchmarkDecisionsRoundTrip(b *testing.B) {
	dir := b.TempDir()
	list := filepath.Join(dir, "bad.txt")
	writeAddressList(b, list, 100_000)
	for b.Loop() {
		d := startDaemon(b, filepath.Join(dir, fmt.Sprint(time.Now().UnixNano())))
		var out, errb bytes.Buffer
		if rc := runDecisions(append([]string{"import", list, "--duration", "1h"}, clientArgs(d)...), &out, &errb); rc != 0 {
			b.Fatal(errb.String())
		}
		if rc := runDecisions(append([]string{"export", filepath.Join(dir, "out.jsonl")}, clientArgs(d)...), &out, &errb); rc != 0 {
			b.Fatal(errb.String())
		}
		d.stop(b)
	}
}

// BenchmarkDecisionsOneByOne is the peer of BenchmarkDecisionsRoundTrip: the
// path there was before the bulk endpoint, one POST /v1/mitigations per
// decision (10,000 of them per op; multiply by 10 to compare).
func BenchmarkDecisionsOneByOne(b *testing.B) {
	dir := b.TempDir()
	for b.Loop() {
		d := startDaemon(b, filepath.Join(dir, fmt.Sprint(time.Now().UnixNano())))
		tok, _ := os.ReadFile(filepath.Join(d.dir, "state", "admin.token"))
		a := admin.NewClient(d.d.adminLn.Addr().String(), strings.TrimSpace(string(tok)), "", 0)
		for i := range 10_000 {
			req := addRequest{Scope: map[string]string{"ip.src": fmt.Sprintf("10.0.%d.%d", i>>8, i&0xff)}, Action: "block", Duration: "1h"}
			if err := a.DoJSON("POST", "/v1/mitigations", req, nil); err != nil {
				b.Fatal(err)
			}
		}
		d.stop(b)
	}
}

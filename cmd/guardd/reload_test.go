package main

import (
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/characteristics/mmdbtest"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/rules"
	"github.com/guardd/guardd/testwait"
)

// decideXFF asks as nginx does for a request that came through a proxy.
func (td *testDaemon) decideXFF(t *testing.T, peer, xff string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+td.d.decisionLn.Addr().String()+"/v1/decide", nil)
	req.Header.Set("X-Real-IP", peer)
	req.Header.Set("X-Forwarded-For", xff)
	req.Header.Set("X-Original-Method", "GET")
	req.Header.Set("X-Original-URI", "/")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestReloadReachesDecisions: a reload reaches the decision API's enrichment
// (a proxy range removed is no longer believed) and the store's allowlist,
// and a changed listen address is reported as waiting for a restart, not as
// a successful reload.
func TestReloadReachesDecisions(t *testing.T) {
	dir := t.TempDir()
	writeTestConfig(t, dir, "characteristics: {trusted_proxies: [192.0.2.1]}\n")
	td := startDaemon(t, dir)
	defer td.stop(t)
	now := time.Now()
	const client = "203.0.113.50"
	if _, _, err := td.d.store.Add(mitigation.Mitigation{Rule: "manual", Action: mitigation.ActionBlock, Origin: "api",
		Scope: mitigation.Scope{{Name: "ip.src", Value: client}}, Expires: now.Add(time.Hour)}, now); err != nil {
		t.Fatal(err)
	}
	if c := td.decideXFF(t, "192.0.2.1", client); c != 401 {
		t.Fatalf("client behind the trusted proxy: %d, want 401", c)
	}

	// The proxy is no longer trusted: its X-Forwarded-For is not believed.
	cfg, _ := os.ReadFile(td.config)
	os.WriteFile(td.config, []byte(strings.Replace(string(cfg), "trusted_proxies: [192.0.2.1]", "trusted_proxies: []", 1)), 0o644)
	td.d.reload()
	if testutil.ToFloat64(td.d.m.reloadOK) != 1 {
		t.Fatal("reload failed")
	}
	if c := td.decideXFF(t, "192.0.2.1", client); c != 204 {
		t.Fatalf("after removing the proxy: %d, want 204 (X-Forwarded-For still believed)", c)
	}

	// The allowlist reaches the store: the client's mitigation goes, and a
	// new one is refused.
	cfg, _ = os.ReadFile(td.config)
	os.WriteFile(td.config, append(cfg, []byte("mitigation: {state_dir: "+filepath.Join(dir, "state")+", allowlist: {cidrs: [203.0.113.0/24]}}\n")...), 0o644)
	fixDup(t, td.config)
	td.d.reload()
	if testutil.ToFloat64(td.d.m.reloadOK) != 1 {
		t.Fatal("allowlist reload not applied")
	}
	if c, _ := td.decide(t, client, "/"); c != 204 {
		t.Fatalf("allowlisted client still blocked: %d", c)
	}
	if _, ok, _ := td.d.store.Add(mitigation.Mitigation{Rule: "manual", Action: mitigation.ActionBlock, Origin: "api",
		Scope: mitigation.Scope{{Name: "ip.src", Value: client}}, Expires: now.Add(time.Hour)}, now); ok {
		t.Fatal("store accepted an allowlisted scope after the reload")
	}

	// A new decision address cannot be taken without a restart: said so.
	cfg, _ = os.ReadFile(td.config)
	os.WriteFile(td.config, []byte(strings.Replace(string(cfg), "decision: {listen: 127.0.0.1:0}", "decision: {listen: 127.0.0.1:1}", 1)), 0o644)
	td.d.reload()
	if testutil.ToFloat64(td.d.m.reloadOK) != 0 || testutil.ToFloat64(td.d.m.restart) != 1 {
		t.Fatalf("changed listen address: reload_successful %v, restart_pending %v; want 0 and 1",
			testutil.ToFloat64(td.d.m.reloadOK), testutil.ToFloat64(td.d.m.restart))
	}
}

// fixDup drops the first of two top-level mitigation: keys, as a test
// appends a new one to the base config.
func fixDup(t *testing.T, path string) {
	t.Helper()
	b, _ := os.ReadFile(path)
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "mitigation:") {
			lines = append(lines[:i], lines[i+1:]...)
			break
		}
	}
	os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644)
}

// TestReloadUnderDecisions: reloads while nginx asks, with a MaxMind
// database, must neither fault nor lose the ASN (defect 1: SIGHUP closed the
// reader the decision API was using; run with -race).
func TestReloadUnderDecisions(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "asn.mmdb")
	if err := mmdbtest.Write(db, []mmdbtest.Network{{Prefix: netip.MustParsePrefix("203.0.113.0/24"), ASN: 64500}}); err != nil {
		t.Fatal(err)
	}
	writeTestConfig(t, dir, fmt.Sprintf("characteristics: {asn_database: %q}\n", db))
	td := startDaemon(t, dir)
	defer td.stop(t)
	now := time.Now()
	if _, _, err := td.d.store.Add(mitigation.Mitigation{Rule: "manual", Action: mitigation.ActionBlock, Origin: "api",
		Scope: mitigation.Scope{{Name: "ip.src.asnum", Value: "64500"}}, Expires: now.Add(time.Hour)}, now); err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		stop  atomic.Bool
		wrong atomic.Int64
		asked atomic.Int64
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if c, _ := td.decide(t, "203.0.113.9", "/"); c != 401 {
					wrong.Add(1)
				}
				asked.Add(1)
			}
		}()
	}
	for range 20 {
		td.d.reload()
	}
	testwait.Until(t, patience, "decisions during the reloads", func() bool { return asked.Load() >= 40 })
	stop.Store(true)
	wg.Wait()
	if wrong.Load() != 0 {
		t.Fatalf("%d of %d decisions lost the ASN block across reloads", wrong.Load(), asked.Load())
	}
	if testutil.ToFloat64(td.d.m.reloadOK) != 1 {
		t.Fatal("reloads failed")
	}
}

// loginRule counts failed POSTs to the configured login paths.
const loginRule = `# METADATA
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 5
#   action: block
package guardd.rules.cfg_login

import data.guardd.config

count if {
	input.http.method == "POST"
	lower(input.http.norm.path) in config.login_paths
	input.http.status == 401
}
`

// TestReloadLoginPaths: a changed rules.login_paths reaches the rules on
// reload, still compiled natively.
func TestReloadLoginPaths(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "rules"), 0o755)
	os.WriteFile(filepath.Join(dir, "rules", "login.rego"), []byte(testRule), 0o644)
	os.WriteFile(filepath.Join(dir, "rules", "cfg_login.rego"), []byte(loginRule), 0o644)
	writeTestConfig(t, dir, "")
	setPaths := func(paths string) {
		cfg, _ := os.ReadFile(filepath.Join(dir, "guardd.yaml"))
		lines := strings.Split(string(cfg), "\n")
		for i, l := range lines {
			if strings.HasPrefix(l, "rules:") {
				lines[i] = strings.Replace(regexp.MustCompile(`, login_paths: \[[^]]*\]`).ReplaceAllString(l, ""), "}", ", login_paths: "+paths+"}", 1)
			}
		}
		os.WriteFile(filepath.Join(dir, "guardd.yaml"), []byte(strings.Join(lines, "\n")), 0o644)
	}
	setPaths("[/members/enter]")
	td := startDaemon(t, dir)
	defer td.stop(t)
	counts := func(path string) bool {
		t.Helper()
		set := td.d.pipes.Load().Rules()
		for i, r := range set.Rules() {
			if r.Name != "cfg_login" {
				continue
			}
			if !r.Native {
				t.Fatalf("cfg_login falls back: %v", r.Fallback)
			}
			var m rules.Matches
			set.Eval(&characteristics.Event{Method: "POST", Path: path, Status: 401}, &m)
			return m.Count(i)
		}
		t.Fatal("rule cfg_login not loaded")
		return false
	}
	if !counts("/members/enter") || counts("/portal/in") {
		t.Fatal("before the reload: want /members/enter counted, /portal/in not")
	}
	setPaths("[/portal/in]")
	td.d.reload()
	if testutil.ToFloat64(td.d.m.reloadOK) != 1 {
		t.Fatal("reload of rules.login_paths failed")
	}
	if counts("/members/enter") || !counts("/portal/in") {
		t.Fatal("after the reload: want /portal/in counted, /members/enter not")
	}
	// A bad entry keeps the running list.
	setPaths(`[portal]`)
	td.d.reload()
	if testutil.ToFloat64(td.d.m.reloadOK) != 0 || !counts("/portal/in") {
		t.Fatal("a bad login path replaced the running rules")
	}
}

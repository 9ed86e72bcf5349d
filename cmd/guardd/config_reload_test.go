package main

import (
	"bytes"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/guardd/guardd/config"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/decision"
)

var updateRef = flag.Bool("update", false, "rewrite ../../docs/configuration.md")

// TestReloadCoversConfig walks every key of config.Config: each is applied
// live by a component of the daemon or declared restart-only by one, so a
// new key (or a section such as fleet, once silently ignored on reload)
// cannot be left out; and every key a component declares exists.
func TestReloadCoversConfig(t *testing.T) {
	td := startDaemon(t, t.TempDir())
	defer td.stop(t)
	rs := td.d.reloaders
	for _, k := range config.Fields() {
		if !slices.ContainsFunc(rs, func(r config.Reloader) bool { return config.Covers(r.Live, k) || config.Covers(r.Restart, k) }) {
			t.Errorf("%s: no component applies it on a reload, and none declares it restart-only", k)
		}
	}
	for _, r := range rs {
		for _, p := range slices.Concat(r.Live, r.Restart, slices.Collect(mapKeys(r.Doc))) {
			if !config.IsKey(p) {
				t.Errorf("reloader %s declares %q, which is no key of the configuration", r.Name, p)
			}
		}
	}
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestConfigReference fails when docs/configuration.md differs from what
// the configuration's types and the daemon's reloaders say (run with
// -update after a change).
func TestConfigReference(t *testing.T) {
	td := startDaemon(t, t.TempDir())
	defer td.stop(t)
	got, err := config.Reference("../..", td.d.reloaders)
	if err != nil {
		t.Fatal(err)
	}
	const path = "../../docs/configuration.md"
	if *updateRef {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/guardd -run TestConfigReference -update)", err)
	}
	if string(want) != got {
		t.Errorf("docs/configuration.md is out of date: run go test ./cmd/guardd -run TestConfigReference -update")
	}
}

// logBuffer is a log destination the test reads while the daemon writes.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startDaemonLogged starts a daemon whose log the test reads.
func startDaemonLogged(t *testing.T, dir string) (*testDaemon, *logBuffer) {
	t.Helper()
	var buf logBuffer
	var w io.Writer = &buf
	if testing.Verbose() {
		w = io.MultiWriter(&buf, os.Stderr)
	}
	return startDaemonWith(t, dir, slog.New(slog.NewTextHandler(w, nil))), &buf
}

// rewrite replaces old with new in the daemon's configuration file.
func (td *testDaemon) rewrite(t *testing.T, old, new string) {
	t.Helper()
	b, err := os.ReadFile(td.config)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("config has no %q", old)
	}
	if err := os.WriteFile(td.config, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}

// wantReload checks the reload gauges (pending keys waiting for a restart)
// and the log lines naming what waits for a restart.
func (td *testDaemon) wantReload(t *testing.T, log *logBuffer, ok bool, pending int, restart ...string) {
	t.Helper()
	okv, pv := testutil.ToFloat64(td.d.m.reloadOK), testutil.ToFloat64(td.d.m.restart)
	if (okv == 1) != ok || int(pv) != pending {
		t.Errorf("reload_successful %v, restart_pending %v; want ok %v and %d pending (%q)", okv, pv, ok, pending, restart)
	}
	for _, r := range restart {
		if want := `msg="configuration change not applied until a restart" change="` + r + `"`; log != nil && !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %s", want)
		}
	}
}

// respond asks /v1/respond as nginx does for a denied request.
func (td *testDaemon) respond(t *testing.T, dec, method, uri string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+td.d.decisionLn.Addr().String()+"/v1/respond", nil)
	req.Header.Set(decision.HeaderDecision, dec)
	req.Header.Set(decision.HeaderMethod, method)
	req.Header.Set(decision.HeaderURI, uri)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body)
}

// TestReloadShadowban: a changed shadowban section (a route's template, the
// headers, a new route) reloads live: the next shadow-banned request gets
// the new answer; a bad one keeps the running routes.
func TestReloadShadowban(t *testing.T) {
	dir := t.TempDir()
	writeTestConfig(t, dir, "shadowban: {headers: {X-App: v1}, routes: [{method: POST, path: /api/invite, body: '{\"ok\":true}'}]}\n")
	td, log := startDaemonLogged(t, dir)
	defer td.stop(t)
	const client = "203.0.113.60"
	now := time.Now()
	if _, _, err := td.d.store.Add(mitigation.Mitigation{Rule: "manual", Action: mitigation.ActionShadowBan, Origin: "api",
		Scope: mitigation.Scope{{Name: "ip.src", Value: client}}, Expires: now.Add(time.Hour)}, now); err != nil {
		t.Fatal(err)
	}
	_, dec := td.decide(t, client, "/api/invite")
	if !strings.HasPrefix(dec, "shadowban;") {
		t.Fatalf("decision %q, want shadowban", dec)
	}
	answer := func() string {
		code, h, body := td.respond(t, dec, "POST", "/api/invite")
		_, _, other := td.respond(t, dec, "GET", "/feed")
		return strings.Join([]string{http.StatusText(code), h.Get("X-App"), body, other}, " | ")
	}
	if got, want := answer(), `OK | v1 | {"ok":true} | {}`; got != want {
		t.Fatalf("before the reload: %s, want %s", got, want)
	}
	for _, tc := range []struct {
		name, old, new string
		ok             bool
		want           string
	}{
		{"template, header and route", `{headers: {X-App: v1}, routes: [{method: POST, path: /api/invite, body: '{"ok":true}'}]}`,
			`{headers: {X-App: v2}, routes: [{method: POST, path: /api/invite, body: '{"sent":1}'}, {path: /feed, content_type: text/plain, body: none}]}`,
			true, `OK | v2 | {"sent":1} | none`},
		{"bad status keeps the running routes", `body: '{"sent":1}'}`, `body: '{"sent":1}', status: 500}`,
			false, `OK | v2 | {"sent":1} | none`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			td.rewrite(t, tc.old, tc.new)
			td.d.reload()
			td.wantReload(t, log, tc.ok, 0)
			if got := answer(); got != tc.want {
				t.Errorf("after the reload: %s, want %s", got, tc.want)
			}
		})
	}
}

// throttleOne admits one request a minute per client under /api/.
const throttleOne = `# METADATA
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 1
#   action: throttle
#   algorithm: gcra
package guardd.rules.api_one

count if startswith(input.http.path, "/api/")
`

// TestReloadMaxKeys: a changed counting.max_keys reaches the request-time
// limiter's tables too (once reported applied while it kept the old cap):
// at one key per rule, a second client evicts the first, whose next
// request is admitted again.
func TestReloadMaxKeys(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "rules"), 0o755)
	os.WriteFile(filepath.Join(dir, "rules", "api_one.rego"), []byte(throttleOne), 0o644)
	writeTestConfig(t, dir, "counting: {max_keys: 1000}\n")
	td, log := startDaemonLogged(t, dir)
	defer td.stop(t)
	admitted := func(ip string) bool {
		code, _ := td.decide(t, ip, "/api/x")
		return code == http.StatusNoContent || code == http.StatusOK
	}
	if !admitted("192.0.2.1") || admitted("192.0.2.1") || !admitted("192.0.2.2") || admitted("192.0.2.1") {
		t.Fatal("before the reload: want the first request of each client admitted, the second refused")
	}
	td.rewrite(t, "max_keys: 1000", "max_keys: 1")
	td.d.reload()
	td.wantReload(t, log, true, 0)
	for i, tc := range []struct {
		ip       string
		admitted bool
	}{{"192.0.2.1", true}, {"192.0.2.1", false}, {"192.0.2.2", true}, {"192.0.2.1", true}} {
		if got := admitted(tc.ip); got != tc.admitted {
			t.Errorf("max_keys 1, request %d from %s: admitted %v, want %v", i, tc.ip, got, tc.admitted)
		}
	}
}

// TestReloadFleetAdded: a fleet section added to a running daemon cannot be
// taken live; the reload says exactly that (once it said nothing, and
// reported success), and the configuration in force keeps no fleet.
func TestReloadFleetAdded(t *testing.T) {
	dir := t.TempDir()
	writeTestConfig(t, dir, "")
	td, log := startDaemonLogged(t, dir)
	defer td.stop(t)
	b, _ := os.ReadFile(td.config)
	os.WriteFile(td.config, append(b, "fleet: {node: edge-1, redis: {addresses: [\"127.0.0.1:1\"]}}\n"...), 0o644)
	td.d.reload()
	td.wantReload(t, log, false, 1, "fleet: fleet: needs a restart")
	if td.d.cfg.Load().Fleet != nil {
		t.Error("the configuration in force holds a fleet section the daemon does not run")
	}
}

// TestReloadStdinFlag: --stdin turns sources.stdin on for the run; a reload
// of the file (which does not say stdin) neither drops it nor reports it as
// waiting for a restart.
func TestReloadStdinFlag(t *testing.T) {
	dir := t.TempDir()
	writeTestConfig(t, dir, "")
	path := filepath.Join(dir, "guardd.yaml")
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Sources.Stdin = true // as runDaemon does for --stdin
	d, err := newDaemon(path, cfg, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	defer d.store.Close()
	defer d.pipes.Close()
	d.stdinFlag = true
	d.reload()
	if ok, pending := testutil.ToFloat64(d.m.reloadOK), testutil.ToFloat64(d.m.restart); ok != 1 || pending != 0 || !d.cfg.Load().Sources.Stdin {
		t.Errorf("reload_successful %v, restart_pending %v, stdin %v; want 1, 0, true", ok, pending, d.cfg.Load().Sources.Stdin)
	}
}

// TestReloadRestartKeepsRunningValues: a change that waits for a restart is
// reported by its keys, and what reads the configuration in force (the
// tail checkpoint's path, the admin token's file) keeps the running value.
func TestReloadRestartKeepsRunningValues(t *testing.T) {
	dir := t.TempDir()
	writeTestConfig(t, dir, "")
	td, log := startDaemonLogged(t, dir)
	defer td.stop(t)
	checkpoint, token := td.d.checkpointPath(), td.d.cfg.Load().TokenFile()
	b, _ := os.ReadFile(td.config)
	moved := strings.Replace(string(b), "poll_interval: 20ms", "poll_interval: 20ms, checkpoint: "+filepath.Join(dir, "elsewhere.json"), 1)
	moved = strings.Replace(moved, "admin: {listen: 127.0.0.1:0}", "admin: {listen: 127.0.0.1:0, token_file: "+filepath.Join(dir, "other.token")+"}", 1)
	os.WriteFile(td.config, []byte(moved), 0o644)
	td.d.reload()
	td.wantReload(t, log, false, 2, "sources: sources.nginx.checkpoint: needs a restart", "admin: admin.token_file: needs a restart")
	if td.d.checkpointPath() != checkpoint || td.d.cfg.Load().TokenFile() != token {
		t.Errorf("in force: checkpoint %s, token file %s; want the running %s and %s", td.d.checkpointPath(), td.d.cfg.Load().TokenFile(), checkpoint, token)
	}
	// Put back, nothing waits any more.
	os.WriteFile(td.config, b, 0o644)
	td.d.reload()
	td.wantReload(t, log, true, 0)
}

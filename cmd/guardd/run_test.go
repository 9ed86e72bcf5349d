package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/guardd/guardd/config"
	"github.com/guardd/guardd/testwait"
)

const testRule = `# METADATA
# title: test login brute force
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 5
#   action: block
#   mitigation_timeout: 10m
package guardd.rules.test_login

count if {
	input.http.path == "/login"
	input.http.status == 401
}

# The whole site, not only /login: at decision time there is no status yet,
# so the default (the counting expression) could never match.
mitigate if true
`

// writeTestConfig writes dir/guardd.yaml for a daemon on loopback that
// follows dir/access.log (from its start) with the rules in dir/rules (the
// test login rule when there is none) and keeps state in dir/state. extra is
// YAML appended for what a test adds (top-level keys the base does not use,
// or a whole decision: key, which replaces the base's).
func writeTestConfig(t testing.TB, dir, extra string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "rules")); err != nil {
		os.MkdirAll(filepath.Join(dir, "rules"), 0o755)
		os.WriteFile(filepath.Join(dir, "rules", "login.rego"), []byte(testRule), 0o644)
	}
	log := filepath.Join(dir, "access.log")
	if _, err := os.Stat(log); err != nil {
		os.WriteFile(log, nil, 0o644)
	}
	base := fmt.Sprintf(`
sources: {nginx: {paths: [%q], poll_interval: 20ms, from_start: true}}
decision: {listen: 127.0.0.1:0}
admin: {listen: 127.0.0.1:0}
rules: {disable_builtin: true, dirs: [%q]}
mitigation: {state_dir: %q}
`, log, filepath.Join(dir, "rules"), filepath.Join(dir, "state"))
	if strings.Contains("\n"+extra, "\ndecision:") {
		base = strings.Replace(base, "decision: {listen: 127.0.0.1:0}\n", "", 1)
	}
	if err := os.WriteFile(filepath.Join(dir, "guardd.yaml"), []byte(base+extra), 0o644); err != nil {
		t.Fatal(err)
	}
}

type testDaemon struct {
	d      *daemon
	cancel context.CancelFunc
	done   chan error
	dir    string
	log    string
	config string
}

func startDaemon(t testing.TB, dir string) *testDaemon {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return startDaemonWith(t, dir, logger)
}

// startDaemonWith is startDaemon logging to logger.
func startDaemonWith(t testing.TB, dir string, logger *slog.Logger) *testDaemon {
	t.Helper()
	td := &testDaemon{dir: dir, log: filepath.Join(dir, "access.log"), config: filepath.Join(dir, "guardd.yaml")}
	if _, err := os.Stat(td.config); err != nil {
		writeTestConfig(t, dir, "")
	}
	cfg, err := config.Load(td.config)
	if err != nil {
		t.Fatal(err)
	}
	td.d, err = newDaemon(td.config, cfg, logger, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if err := td.d.listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	td.cancel, td.done = cancel, make(chan error, 1)
	go func() { td.done <- td.d.Run(ctx) }()
	return td
}

func (td *testDaemon) stop(t testing.TB) {
	td.cancel()
	if err := <-td.done; err != nil {
		t.Fatal(err)
	}
}

func (td *testDaemon) appendLines(t *testing.T, lines ...string) {
	f, err := os.OpenFile(td.log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		fmt.Fprintln(f, l)
	}
}

func logLine(ip, path string, status int, t time.Time) string {
	return fmt.Sprintf(`%s - - [%s] "POST %s HTTP/1.1" %d 12 "-" "test"`, ip, t.Format("02/Jan/2006:15:04:05 -0700"), path, status)
}

func (td *testDaemon) decide(t *testing.T, ip, uri string) (int, string) {
	req, _ := http.NewRequest("GET", "http://"+td.d.decisionLn.Addr().String()+"/v1/decide", nil)
	req.Header.Set("X-Real-IP", ip)
	req.Header.Set("X-Original-Method", "GET")
	req.Header.Set("X-Original-URI", uri)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("X-Guardd-Decision")
}

// patience bounds the polls of these tests: generous, as the machine may be
// busy; a poll that succeeds returns at once.
const patience = 30 * time.Second

// The daemons of these tests, in this process or run from its binary
// (guarddProcess), give a pipeline to Redis a loaded machine's deadline,
// as counting/redis's own integration tests do: at the default 20 ms, a
// machine kept busy (stress-ng --cpu 2) held the breaker open for 40 s.
func init() { fleetDeadline = 2 * time.Second }

func TestDaemon(t *testing.T) {
	dir := t.TempDir()
	td := startDaemon(t, dir)
	now := time.Now()
	for i := range 6 {
		td.appendLines(t, logLine("203.0.113.7", "/login", 401, now.Add(time.Duration(i)*time.Second)))
	}
	td.appendLines(t, "garbage line", logLine("198.51.100.1", "/login", 401, now))
	testwait.Until(t, patience, "the attacker to be blocked", func() bool { c, _ := td.decide(t, "203.0.113.7", "/"); return c == 401 })
	if c, d := td.decide(t, "203.0.113.7", "/x"); c != 401 || !strings.HasPrefix(d, "block;") {
		t.Fatalf("attacker: %d %q", c, d)
	}
	if c, _ := td.decide(t, "198.51.100.1", "/"); c != 204 {
		t.Fatalf("other client: %d, want 204", c)
	}
	testwait.Until(t, patience, "the parse error to be counted", func() bool {
		return testutil.ToFloat64(td.d.pm.ParseErrors.WithLabelValues("nginx_log")) == 1
	})

	// The CLI, through the admin API.
	base := []string{"--admin", td.d.adminLn.Addr().String(), "--token-file", filepath.Join(dir, "state", "admin.token")}
	var out, errb bytes.Buffer
	if rc := runDecisions(append([]string{"list"}, base...), &out, &errb); rc != 0 || !strings.Contains(out.String(), "ip.src=203.0.113.7") {
		t.Fatalf("decisions list: %d %s %s", rc, out.String(), errb.String())
	}
	out.Reset()
	if rc := runDecisions(append([]string{"add", "--scope", "ip.src.prefix=192.0.2.0/24", "--action", "rate_limit", "--duration", "1h"}, base...), &out, &errb); rc != 0 {
		t.Fatalf("decisions add: %d %s", rc, errb.String())
	}
	if c, d := td.decide(t, "192.0.2.55", "/"); c != 401 || !strings.HasPrefix(d, "rate_limit;") {
		t.Fatalf("manual prefix rate limit: %d %q", c, d)
	}
	out.Reset()
	if rc := runStatus(append(base, "--json"), &out, &errb); rc != 0 || !strings.Contains(out.String(), `"test_login"`) {
		t.Fatalf("status: %d %s %s", rc, out.String(), errb.String())
	}
	// Without the token: refused.
	resp, err := http.Get("http://" + td.d.adminLn.Addr().String() + "/v1/mitigations")
	if err != nil || resp.StatusCode != 401 {
		t.Fatalf("admin API without token: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	// Metrics carry no addresses.
	resp, err = http.Get("http://" + td.d.adminLn.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"guardd_ingest_events_total", "guardd_decision_requests_total", "guardd_mitigation_active", "guardd_config_last_reload_successful 1", "guardd_rules_trips_total"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(string(body), "203.0.113.7") {
		t.Error("an address appears in the metrics")
	}

	// A bad rule is refused on reload; the running rules stay.
	os.WriteFile(filepath.Join(dir, "rules", "bad.rego"), []byte("package guardd.rules.bad\ncount if {"), 0o644)
	td.d.reload()
	if testutil.ToFloat64(td.d.m.reloadOK) != 0 || len(td.d.pipes.Load().Rules().Rules()) != 1 {
		t.Fatal("bad rule replaced the good ones")
	}
	os.Remove(filepath.Join(dir, "rules", "bad.rego"))
	td.d.reload()
	if testutil.ToFloat64(td.d.m.reloadOK) != 1 {
		t.Fatal("reload of good rules failed")
	}
	td.stop(t)

	// Active mitigations survive a restart.
	td = startDaemon(t, dir)
	defer td.stop(t)
	if c, _ := td.decide(t, "203.0.113.7", "/"); c != 401 {
		t.Fatalf("after restart the attacker is allowed (%d)", c)
	}
}

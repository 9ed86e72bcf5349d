package main

import (
	"fmt"
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

// probeRule reads only the request, so decision.count counts it when nginx
// asks.
const probeRule = `# METADATA
# title: test probe
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 3
#   action: block
#   mitigation_timeout: 10m
package guardd.rules.test_probe

count if startswith(input.http.path, "/probe")

mitigate if true
`

const countFormat = `$remote_addr - - [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $request_id`

// writeCountConfig writes writeTestConfig's daemon with the login and probe
// rules, log format format and decision.count on.
func writeCountConfig(t *testing.T, dir, format string) {
	t.Helper()
	os.MkdirAll(filepath.Join(dir, "rules"), 0o755)
	os.WriteFile(filepath.Join(dir, "rules", "login.rego"), []byte(testRule), 0o644)
	os.WriteFile(filepath.Join(dir, "rules", "probe.rego"), []byte(probeRule), 0o644)
	writeTestConfig(t, dir, fmt.Sprintf("log: {format: %q}\ndecision: {listen: 127.0.0.1:0, count: true}\n", format))
}

func countLine(ip, path string, status int, id string) string {
	return fmt.Sprintf(`%s - - [%s] "GET %s HTTP/1.1" %d 12 "-" "test" %s`, ip, time.Now().Format("02/Jan/2006:15:04:05 -0700"), path, status, id)
}

func (td *testDaemon) decideID(t *testing.T, ip, uri, id string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+td.d.decisionLn.Addr().String()+"/v1/decide", nil)
	req.Header.Set("X-Real-IP", ip)
	req.Header.Set("X-Original-Method", "GET")
	req.Header.Set("X-Original-URI", uri)
	if id != "" {
		req.Header.Set("X-Request-ID", id)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// With decision.count, a request-time rule counts each request once: when
// nginx asks, not again from its log line; the request that trips it is
// itself refused; requests without an ID, and rules that need the status,
// count from the log.
func TestDecisionCount(t *testing.T) {
	dir := t.TempDir()
	writeCountConfig(t, dir, countFormat)
	td := startDaemon(t, dir)
	defer td.stop(t)
	if !td.d.pipes.Load().Rules().Rules()[1].RequestTime || td.d.pipes.Load().Rules().Rules()[0].RequestTime {
		t.Fatal("rule classification: want test_probe request-time, test_login not")
	}
	events := td.d.pm.Events.WithLabelValues("nginx_log")

	// Three probes, each asked about and then logged: a count of 3, the
	// limit. Counted twice it would be 6 and the client blocked.
	const a = "203.0.113.10"
	for i := range 3 {
		id := fmt.Sprintf("%032x", i+1)
		if c := td.decideID(t, a, fmt.Sprintf("/probe/%d", i), id); c != 204 {
			t.Fatalf("probe %d: %d, want 204", i, c)
		}
		td.appendLines(t, countLine(a, fmt.Sprintf("/probe/%d", i), 404, id))
	}
	testwait.Until(t, patience, "the log lines to be read", func() bool { return testutil.ToFloat64(events) == 3 })
	if c := td.decideID(t, a, "/", ""); c != 204 {
		t.Fatalf("after 3 probes counted once each: %d, want 204 (counted twice?)", c)
	}
	// The fourth trips the rule when nginx asks, and is itself refused.
	if c := td.decideID(t, a, "/probe/4", fmt.Sprintf("%032x", 4)); c != 401 {
		t.Fatalf("the tripping probe: %d, want 401", c)
	}

	// Without an ID the decision API does not count; the log lines do.
	const b = "203.0.113.11"
	for i := range 4 {
		if c := td.decideID(t, b, "/probe/x", ""); c != 204 {
			t.Fatalf("probe without id %d: %d", i, c)
		}
		td.appendLines(t, countLine(b, "/probe/x", 404, "-"))
	}
	testwait.Until(t, patience, "the client without IDs to be blocked from its log lines", func() bool { return td.decideID(t, b, "/", "") == 401 })

	// A status rule counts from the log even for requests with an ID.
	const c = "203.0.113.12"
	for i := range 6 {
		id := fmt.Sprintf("%032x", 100+i)
		td.decideID(t, c, "/login", id)
		td.appendLines(t, countLine(c, "/login", 401, id))
	}
	testwait.Until(t, patience, "the login rule to trip from the log", func() bool { return td.decideID(t, c, "/", "") == 401 })
}

func TestDecisionCountNeedsRequestID(t *testing.T) {
	dir := t.TempDir()
	writeCountConfig(t, dir, strings.TrimSuffix(countFormat, " $request_id"))
	cfg, err := config.Load(filepath.Join(dir, "guardd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = newDaemon(filepath.Join(dir, "guardd.yaml"), cfg, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err == nil || !strings.Contains(err.Error(), "decision.count") || !strings.Contains(err.Error(), "$request_id") {
		t.Fatalf("err = %v, want decision.count to ask for $request_id", err)
	}
}

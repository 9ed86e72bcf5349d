package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/guardd/guardd/ingest/sniff"
)

const ja4Rule = `# METADATA
# title: one TLS stack, many requests
# custom:
#   characteristics: [tls.ja4]
#   period: 1h
#   requests_per_period: 1
#   action: block
#   mitigation_timeout: 10m
package guardd.rules.ja4_test

count if input.tls.ja4
`

// TestReplayJoinsCapture replays log lines whose client address and port
// match the TLS connections of a capture: the JA4 computed from the capture
// must reach the rules through the join.
func TestReplayJoinsCapture(t *testing.T) {
	pcap := filepath.Join("..", "..", "ingest", "sniff", "testdata", "chromium.pcap")
	var lines []string
	var ja4 string
	if err := sniff.ReadFiles([]string{pcap}, sniff.Config{}, func(r *sniff.Record) {
		if r.Proto != "tls" {
			return
		}
		ja4 = r.JA4
		lines = append(lines, fmt.Sprintf(`%s - - [%s] "GET / HTTP/1.1" 200 5 "-" "Mozilla/5.0" %d`,
			r.Src, r.Time.Format("02/Jan/2006:15:04:05 -0700"), r.SrcPort))
	}); err != nil {
		t.Fatal(err)
	}
	if len(lines) < 2 {
		t.Fatalf("capture has %d TLS hellos, want 2 or more", len(lines))
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "ja4.rego"), []byte(ja4Rule), 0o644)
	var out, errb bytes.Buffer
	args := []string{"--json", "--no-builtin", "--rules", dir, "--progress", "never",
		"--format", `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $remote_port`,
		"--pcap", pcap, log}
	if rc := runReplay(args, &out, &errb); rc != 0 {
		t.Fatalf("replay: %d %s", rc, errb.String())
	}
	var m struct {
		Rule  string            `json:"rule"`
		Scope map[string]string `json:"scope"`
	}
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("output %q: %v", out.String(), err)
	}
	if m.Rule != "ja4_test" || m.Scope["tls.ja4"] != ja4 {
		t.Fatalf("mitigation %+v, want ja4_test on tls.ja4=%s", m, ja4)
	}
	// Without the capture there is no JA4, so nothing trips.
	out.Reset()
	if rc := runReplay(slices.Concat(args[:8], args[10:]), &out, &errb); rc != 0 || out.Len() != 0 {
		t.Fatalf("without --pcap: rc %d, output %q, stderr %s", rc, out.String(), errb.String())
	}
}

// TestReplayCommand runs the README's first command on the shipped sample.
func TestReplayCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if rc := runReplay([]string{"--progress", "never", "../../testdata/access.log.gz"}, &out, &errb); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errb.String())
	}
	for _, want := range []string{"RULE", "login_bruteforce", "scan_404", "ip.src=203.0.113.10"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(errb.String(), "0 malformed") {
		t.Errorf("summary: %s", errb.String())
	}
}

// TestReplayClients: `guardd replay --json --clients` prints one object per
// client address that a mitigation actioned or covered (DESIGN.md), each
// consistent with the mitigations of `guardd replay --json`.
func TestReplayClients(t *testing.T) {
	var out, errb bytes.Buffer
	if rc := runReplay([]string{"--json", "--clients", "--progress", "never", "../../testdata/access.log.gz"}, &out, &errb); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errb.String())
	}
	type client struct {
		Addr      string           `json:"ip.src"`
		Requests  int64            `json:"requests"`
		Actioned  int64            `json:"actioned"`
		Actions   map[string]int64 `json:"actions"`
		Rules     []string         `json:"rules"`
		Mitigated *bool            `json:"mitigated"`
	}
	seen := map[string]client{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var c client
		if err := json.Unmarshal([]byte(line), &c); err != nil || c.Addr == "" || c.Mitigated == nil || c.Actions == nil {
			t.Fatalf("line %q: %v", line, err)
		}
		var sum int64
		for _, n := range c.Actions {
			sum += n
		}
		if sum != c.Actioned || c.Actioned > c.Requests || (c.Actioned == 0 && !*c.Mitigated) || len(c.Rules) == 0 {
			t.Errorf("inconsistent %+v", c)
		}
		seen[c.Addr] = c
	}
	if c, ok := seen["203.0.113.10"]; !ok || !*c.Mitigated || c.Actioned == 0 {
		t.Errorf("the brute-forcing client: %+v", c)
	}
	// Without --json it is refused.
	if rc := runReplay([]string{"--clients", "../../testdata/access.log.gz"}, &out, &errb); rc != 2 {
		t.Errorf("--clients without --json: rc %d", rc)
	}
}

// TestReplayWrongFormat: a replay where no line parses exits non-zero and
// says why (defect 8).
func TestReplayWrongFormat(t *testing.T) {
	var out, errb bytes.Buffer
	if rc := runReplay([]string{"--log-json", "--progress", "never", "../../testdata/access.log.gz"}, &out, &errb); rc != 1 || !strings.Contains(errb.String(), "lines malformed") {
		t.Fatalf("rc %d, stderr %s", rc, errb.String())
	}
}

// TestReplayClientsThrottle: `guardd replay --json --clients` counts the
// requests a throttle rule would have refused at the decision API as
// actioned with action throttle, and a shadow rule's apart; the mitigations
// output stays one object per mitigation (a throttle makes none) and the
// per-rule summary goes to stderr.
func TestReplayClientsThrottle(t *testing.T) {
	dir := t.TempDir()
	rule := func(name, alg string, requests int, extra string) string {
		return fmt.Sprintf(`# METADATA
# title: %[1]s
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: %[3]d
#   action: throttle
#   algorithm: %[2]s
%[4]spackage guardd.rules.%[1]s

count if startswith(input.http.path, "/api/")
`, name, alg, requests, extra)
	}
	os.WriteFile(filepath.Join(dir, "tb.rego"), []byte(rule("tb", "token_bucket", 10, "#   burst: 5\n")), 0o644)
	os.WriteFile(filepath.Join(dir, "sh.rego"), []byte(rule("sh", "fixed_window", 3, "#   shadow: true\n")), 0o644)
	var log strings.Builder
	line := func(ip, path string) {
		fmt.Fprintf(&log, "%s - - [01/Nov/2026:10:00:40 +0000] \"GET %s HTTP/1.1\" 200 12 \"-\" \"test\"\n", ip, path)
	}
	for range 12 { // one instant: the bucket admits its burst of 5
		line("203.0.113.7", "/api/x")
	}
	for range 2 {
		line("198.51.100.9", "/api/x")
		line("198.51.100.9", "/")
	}
	path := filepath.Join(dir, "access.log")
	os.WriteFile(path, []byte(log.String()), 0o644)
	args := []string{"--no-builtin", "--rules", dir, "--progress", "never"}

	var out, errb bytes.Buffer
	if rc := runReplay(append(args, "--json", "--clients", path), &out, &errb); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errb.String())
	}
	want := `{"ip.src":"203.0.113.7","requests":12,"actioned":7,"actions":{"throttle":7},"rules":["tb"],"mitigated":false,"shadow":{"sh":9}}` + "\n"
	if out.String() != want {
		t.Errorf("clients:\n%s\nwant:\n%s", out.String(), want)
	}
	for _, s := range []string{"throttle rule sh counted 14 requests, would have refused (shadow) 9 from 1 clients",
		"throttle rule tb counted 14 requests, refused 7 from 1 clients", "0 mitigations over 0 requests"} {
		if !strings.Contains(errb.String(), s) {
			t.Errorf("stderr lacks %q:\n%s", s, errb.String())
		}
	}
	out.Reset()
	if rc := runReplay(append(args, "--json", path), &out, &errb); rc != 0 || out.Len() != 0 {
		t.Errorf("--json: rc %d, printed %q; want no mitigation", rc, out.String())
	}
}

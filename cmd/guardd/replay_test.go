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

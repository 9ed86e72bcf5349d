package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReplayHTMLSummary: guardd replay --html follows clients for the
// report's summary even without --clients, and the rule that matched
// nothing is folded.
func TestReplayHTMLSummary(t *testing.T) {
	dir := t.TempDir()
	writeTestConfig(t, dir, "")
	os.WriteFile(filepath.Join(dir, "rules", "quiet.rego"), []byte(strings.NewReplacer("test_login", "quiet_rule", `"/login"`, `"/never"`).Replace(testRule)), 0o644)
	now := time.Now()
	var lines []string
	for range 8 {
		lines = append(lines, logLine("192.0.2.9", "/login", 401, now))
	}
	lines = append(lines, logLine("192.0.2.10", "/", 200, now))
	log := filepath.Join(dir, "replay.log")
	os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	html := filepath.Join(dir, "report.html")
	var out, errb bytes.Buffer
	if rc := dispatch([]string{"replay", "--config", filepath.Join(dir, "guardd.yaml"), "--html", html, log}, &out, &errb); rc != 0 {
		t.Fatalf("exit %d: %s", rc, errb.String())
	}
	b, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{`<div class="big" id="acted">1</div>clients acted on`, `id="acted-block">1</div>blocked <span class="muted">(3 requests)`,
		`id="acted-challenge">0</div>challenged`, "<td>test_login</td><td>block</td>", "<code>192.0.2.9</code>",
		`<summary>1 rules matched nothing</summary>`, "<td>quiet_rule</td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Index(page, `id="summary"`) > strings.Index(page, "Requests and trips over time") {
		t.Error("the summary does not open the report")
	}
}

package main

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/guardd/guardd/pipeline"
	"github.com/guardd/guardd/scoring"
	"github.com/guardd/guardd/testwait"
)

func TestExplain(t *testing.T) {
	dir := t.TempDir()
	td := startDaemon(t, dir)
	defer td.stop(t)
	now := time.Now()
	for i := range 3 {
		td.appendLines(t, logLine("203.0.113.7", "/login", 401, now.Add(time.Duration(i)*time.Second)))
	}
	testwait.Until(t, patience, "three lines counted", func() bool {
		for _, r := range td.d.explain(netip.MustParseAddr("203.0.113.7")).(pipeline.Explanation).Rules {
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

// TestDeletedRuleMitigationStaysDeleted: an operator deletes a mitigation a
// rule made; the client's next counted request does not bring it straight
// back under a new ID (the rule's count for the key starts afresh).
func TestDeletedRuleMitigationStaysDeleted(t *testing.T) {
	dir := t.TempDir()
	td := startDaemon(t, dir)
	defer td.stop(t)
	now := time.Now()
	for i := range 6 {
		td.appendLines(t, logLine("203.0.113.7", "/login", 401, now.Add(time.Duration(i)*time.Second)))
	}
	testwait.Until(t, patience, "the attacker to be blocked", func() bool { c, _ := td.decide(t, "203.0.113.7", "/"); return c == 401 })
	ms := td.d.store.List(time.Now())
	if len(ms) != 1 || ms[0].Origin != "rule" {
		t.Fatalf("mitigations: %+v", ms)
	}
	cli(t, append([]string{"delete", fmt.Sprint(ms[0].ID)}, clientArgs(td)...)...)
	td.appendLines(t, logLine("203.0.113.7", "/login", 401, now.Add(7*time.Second)))
	seventh := now.Add(7 * time.Second).Truncate(time.Second) // log lines hold whole seconds
	testwait.Until(t, patience, "the next failure to be read", func() bool { return td.d.lastEvent.Load() >= seventh.UnixNano() })
	var count float64
	for _, r := range td.d.explain(netip.MustParseAddr("203.0.113.7")).(pipeline.Explanation).Rules {
		if r.Rule == "test_login" {
			count = r.Count
		}
	}
	if count != 1 {
		t.Errorf("after the deletion the rule's count is %v, want 1 (counted afresh)", count)
	}
	if ms := td.d.store.List(time.Now()); len(ms) != 0 {
		t.Errorf("the deleted mitigation came back: %+v", ms)
	}
	if c, _ := td.decide(t, "203.0.113.7", "/"); c != 204 {
		t.Errorf("deleted, yet decide says %d", c)
	}
}

// TestWriteExplainScore: the person's view names the anomaly score and
// what made it, and says nothing of a score of zero.
func TestWriteExplainScore(t *testing.T) {
	for _, tc := range []struct {
		name string
		ex   pipeline.Explanation
		want string
	}{
		{"scored", pipeline.Explanation{Address: "203.0.113.7", AnomalyScore: 6.5,
			ScoreReasons: []scoring.Contribution{{Rule: "referer_sqli", Points: 3.5}, {Rule: "odd_header", Points: 3}}},
			"its anomaly score now: 6.50, from referer_sqli 3.50, odd_header 3.00\n"},
		{"none", pipeline.Explanation{Address: "203.0.113.7"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			writeExplain(&b, tc.ex)
			if got := b.String(); tc.want != "" && !strings.Contains(got, tc.want) || tc.want == "" && strings.Contains(got, "anomaly score") {
				t.Errorf("got:\n%s\nwant a line %q", got, tc.want)
			}
		})
	}
}

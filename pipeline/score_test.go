package pipeline

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/guardd/guardd/config"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/scoring"
)

// weakRule is a log-only rule on ip.src that gives points to the client's
// anomaly score from its first request under prefix.
func weakRule(name string, points float64, prefix string) string {
	return fmt.Sprintf(`# METADATA
# title: %[1]s
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 0.5
#   action: log
#   anomaly_score: %[2]v
package guardd.rules.%[1]s

count if startswith(input.http.path, %[3]q)
`, name, points, prefix)
}

// TestReplayAnomalyScore: weak signals of different rules add up to a
// challenge and then a block of the client's address, the same signal
// repeated does not, the network's score is its clients', and every
// request of a scored client is actioned while the mitigation lasts, in
// the replay's report as the decision API would (OriginScore: no
// mitigation expression narrows it).
func TestReplayAnomalyScore(t *testing.T) {
	dir := t.TempDir()
	for name, r := range map[string]string{
		"a.rego": weakRule("odd_search", 3, "/search"),
		"b.rego": weakRule("odd_header", 3, "/hdr"),
		"c.rego": weakRule("probe", 10, "/probe"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(r), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Parse("t.yml", []byte(fmt.Sprintf("rules: {disable_builtin: true, dirs: [%q]}\nscoring: {network_challenge_at: 12}\n", dir)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(cfg, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := wall.Add(-time.Hour)
	var src lines
	at := func(ip, path string, n int, from time.Time) {
		for i := range n {
			// Page views (GET): a challenge is shown, not its fallback.
			src = append(src, strings.Replace(logLine(ip, path, 200, from.Add(time.Duration(i)*time.Second)), `"POST `, `"GET `, 1))
		}
	}
	const (
		repeater = "198.51.100.7" // one weak signal, ten times: 3 points
		doubter  = "203.0.113.7"  // two weak signals: 6, challenged
		certain  = "203.0.113.8"  // two weak and a strong: 16, blocked
		neighbor = "203.0.113.9"  // nothing of its own; its /24 reaches 12 with 3 more points
		late     = "192.0.2.44"   // a weak signal long after: nothing
	)
	at(repeater, "/search", 10, t0)
	at(doubter, "/search", 1, t0)
	at(doubter, "/hdr", 1, t0.Add(time.Second))
	at(doubter, "/page", 5, t0.Add(2*time.Second)) // every request actioned now
	at(certain, "/search", 1, t0.Add(10*time.Second))
	at(certain, "/hdr", 1, t0.Add(11*time.Second))
	at(certain, "/probe", 1, t0.Add(12*time.Second))
	at(certain, "/page", 3, t0.Add(13*time.Second))
	at(neighbor, "/search", 1, t0.Add(20*time.Second)) // /24: 6+16+3 = 25 > 12: challenged
	at(neighbor, "/page", 2, t0.Add(21*time.Second))
	at(late, "/search", 1, t0.Add(2*time.Hour))
	rep := NewReport(true)
	h := NewHolder(p)
	defer h.Close()
	if _, err := Run(context.Background(), Config{Pipelines: h, Store: newStore(t), Report: rep, Replay: true, Now: func() time.Time { return wall }}, src); err != nil {
		t.Fatal(err)
	}

	type impact struct {
		requests, actioned int64
		actions            map[mitigation.Action]int64
	}
	want := map[string]impact{
		doubter:  {7, 6, map[mitigation.Action]int64{mitigation.ActionChallenge: 6}},
		certain:  {6, 5, map[mitigation.Action]int64{mitigation.ActionChallenge: 1, mitigation.ActionBlock: 4}},
		neighbor: {3, 3, map[mitigation.Action]int64{mitigation.ActionChallenge: 3}},
	}
	got := map[string]impact{}
	for _, c := range rep.Clients() {
		got[c.Addr.String()] = impact{c.Requests, c.Actioned, c.Actions}
		if len(c.Rules) != 1 || c.Rules[0] != scoring.RuleName {
			t.Errorf("%s: rules %v, want [%s]", c.Addr, c.Rules, scoring.RuleName)
		}
	}
	for ip, w := range want {
		g := got[ip]
		if g.requests != w.requests || g.actioned != w.actioned || fmt.Sprint(g.actions) != fmt.Sprint(w.actions) {
			t.Errorf("%s: %+v, want %+v", ip, g, w)
		}
	}
	for _, ip := range []string{repeater, late} {
		if g, ok := got[ip]; ok {
			t.Errorf("%s actioned: %+v", ip, g)
		}
	}
	var scopes []string
	for _, m := range rep.Mitigations() {
		if m.Rule == scoring.RuleName {
			scopes = append(scopes, m.Scope[0].Name+"="+m.Scope[0].Value+":"+m.Action.String())
		}
	}
	wantScopes := fmt.Sprint([]string{"ip.src=" + doubter + ":challenge", "ip.src=" + certain + ":block", "ip.src.prefix=203.0.113.0/24:challenge"})
	if fmt.Sprint(scopes) != wantScopes {
		t.Errorf("score mitigations %v, want %v", scopes, wantScopes)
	}
	if s, why := p.Scorer().Explain(netip.MustParseAddr(certain), t0.Add(13*time.Second)); s < 15 || len(why) != 3 || why[0].Rule != "probe" {
		t.Errorf("explain %s: %v %v", certain, s, why)
	}
}

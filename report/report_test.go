package report

import (
	"bytes"
	"flag"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/pipeline"
	"github.com/guardd/guardd/rules"
	"github.com/guardd/guardd/rules/engine"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.html")

const loginRule = `# METADATA
# title: Login brute force
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: block
#   mitigation_timeout: 10m
package guardd.rules.login

count if input.http.path == "/login"
`

var t0 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

// replayFixture runs an engine over a synthetic hour: a brute forcer from
// 10:20 that trips, a busy but benign client that peaks at 8 of 10, and a
// quiet one.
func replayFixture(t testing.TB, attack bool) *Replay {
	set, err := rules.Load(fstest.MapFS{"login.rego": {Data: []byte(loginRule)}}, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.Config{Rules: set})
	if err != nil {
		t.Fatal(err)
	}
	rec := NewRecorder(e.Rules())
	e.SetOnCount(rec.Count)
	var m engine.Matches
	byKey := map[uint64]*pipeline.Mitigation{}
	var ms []*pipeline.Mitigation
	send := func(at time.Duration, ip string) {
		ev := characteristics.Event{Time: t0.Add(at), IP: mustAddr(ip), Method: "POST", Path: "/login", Status: 401}
		m.Reset()
		e.Prepare(&ev, &m)
		for _, tr := range e.Apply(ev.Time, m.Items, m.Keys, nil) {
			pm := byKey[tr.Key]
			if pm == nil {
				pm = &pipeline.Mitigation{Rule: tr.Rule.Name, Action: tr.Rule.Action, Scope: tr.Scope(), FirstSeen: tr.Time}
				byKey[tr.Key] = pm
				ms = append(ms, pm)
			}
			pm.Count++
			pm.Trips++
			pm.LastSeen, pm.Expires = tr.Time, tr.Expires
		}
	}
	for s := 0; s < 3600; s += 30 {
		send(time.Duration(s)*time.Second, "198.51.100.20") // 2 a minute: 20% of the limit
	}
	for s := 0; s < 8; s++ {
		send(30*time.Minute+time.Duration(s)*time.Second, "198.51.100.8") // 8 in a minute: 80%
	}
	if attack {
		for s := 0; s < 600; s += 2 {
			send(20*time.Minute+time.Duration(s)*time.Second, "203.0.113.7")
		}
	}
	info := Info{Files: []string{"access.log"}, Lines: 1000, First: t0, Last: t0.Add(time.Hour), Elapsed: time.Second, Generated: t0.Add(2 * time.Hour),
		Clients: []pipeline.Client{}}
	if attack {
		info.Clients = append(info.Clients, pipeline.Client{Addr: mustAddr("203.0.113.7"), Requests: 300, Actioned: 290,
			Actions: map[mitigation.Action]int64{mitigation.ActionBlock: 290}, Rules: []string{"login"}, Mitigated: true})
	}
	var flat []pipeline.Mitigation
	for _, pm := range ms {
		flat = append(flat, *pm)
	}
	return rec.Report(info, flat, 10)
}

func TestReport(t *testing.T) {
	r := replayFixture(t, true)
	if len(r.Rules) != 1 || r.Bins != 60 || r.Bin != time.Minute {
		t.Fatalf("report: %d rules, %d bins of %v", len(r.Rules), r.Bins, r.Bin)
	}
	rl := r.Rules[0]
	if rl.TotalCounted != 120+8+300 || rl.TotalTrips == 0 || rl.Mitigations != 1 {
		t.Errorf("rule: counted %d, trips %d, mitigations %d", rl.TotalCounted, rl.TotalTrips, rl.Mitigations)
	}
	if len(rl.Closest) != 1 || rl.Closest[0].Key != "198.51.100.8" || rl.Closest[0].Ratio < 0.7 || rl.Closest[0].Ratio > 0.9 {
		// 198.51.100.20 peaks near 20%, under the half of the limit kept.
		t.Errorf("closest: %+v", rl.Closest)
	}
	if len(r.Top) != 1 || r.Top[0].Key != "203.0.113.7" || r.Top[0].Requests == 0 {
		t.Errorf("top: %+v", r.Top)
	}
	var b bytes.Buffer
	if err := WriteReplayHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	checkSelfContained(t, b.String())
	golden(t, "replay", b.Bytes())
}

// TestReportThrottled: the throttle rules' refusals get a table of their
// own; without throttle rules the page is the golden one above.
func TestReportThrottled(t *testing.T) {
	r := replayFixture(t, true)
	r.Throttled = []pipeline.Throttled{{Rule: "api_limit", Counted: 5210, Refused: 312, Clients: 4},
		{Rule: "api_soft", Shadow: true, Counted: 5210, Refused: 1020, Clients: 9}}
	var b bytes.Buffer
	if err := WriteReplayHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	checkSelfContained(t, b.String())
	for _, row := range []string{
		`<tr><td>api_limit</td><td class="num">5210</td><td class="num">312</td><td class="num">4</td><td></td></tr>`,
		`<tr><td>api_soft</td><td class="num">5210</td><td class="num">1020</td><td class="num">9</td><td>shadow: would have refused</td></tr>`,
	} {
		if !strings.Contains(b.String(), row) {
			t.Errorf("no row %s", row)
		}
	}
}

// summaryFixture is the attack replay with two more rules: one that
// challenged a client, and one that matched nothing.
func summaryFixture(t testing.TB) *Replay {
	r := replayFixture(t, true)
	ch := RuleReport{Name: "suspect_ua", Title: "Scripted clients", Action: "challenge", Limit: 5, Period: time.Minute,
		Counted: make([]int64, r.Bins), Trips: make([]int64, r.Bins), TotalCounted: 40, TotalTrips: 35, Mitigations: 2}
	ch.Counted[40], ch.Trips[40] = 40, 35
	quiet := RuleReport{Name: "wp_probe", Title: "WordPress probes", Action: "block", Limit: 3, Period: time.Minute,
		Counted: make([]int64, r.Bins), Trips: make([]int64, r.Bins)}
	r.Rules = append(r.Rules, ch, quiet)
	for i, ip := range []string{"198.51.100.66", "198.51.100.67"} {
		r.Clients = append(r.Clients, pipeline.Client{Addr: mustAddr(ip), Requests: 20, Actioned: int64(15 + i),
			Actions: map[mitigation.Action]int64{mitigation.ActionChallenge: int64(15 + i)}, Rules: []string{"suspect_ua"}})
	}
	return r
}

// TestReportSummary: the report opens with the summary, challenged beside
// blocked, the rules that acted and the top keys; a rule that matched
// nothing is folded away, not drawn.
func TestReportSummary(t *testing.T) {
	r := summaryFixture(t)
	s := r.Summary()
	wantActions := []ActionCount{{"block", 1, 290}, {"challenge", 2, 31}}
	if s.Clients != 3 || !slices.Equal(s.ByAction, wantActions) {
		t.Errorf("summary: %d clients, %+v; want 3, %+v", s.Clients, s.ByAction, wantActions)
	}
	wantActed := []RuleActed{{Name: "suspect_ua", Action: "challenge", Keys: 2, Clients: 2, Trips: 35}, {Name: "login", Action: "block", Keys: 1, Clients: 1, Trips: r.Rules[0].TotalTrips}}
	if !slices.Equal(s.Acted, wantActed) {
		t.Errorf("acted = %+v\nwant %+v", s.Acted, wantActed)
	}
	var b bytes.Buffer
	if err := WriteReplayHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	checkSelfContained(t, page)
	order := []string{`<h2 id="summary">`, `<div class="big" id="acted">3</div>`, `id="acted-block">1</div>blocked`, `id="acted-challenge">2</div>challenged`,
		"<h3>Rules that acted</h3>", "<td>suspect_ua</td><td>challenge</td>", "<h3>Top keys</h3>", "<code>203.0.113.7</code>",
		"Requests and trips over time", `<h3 id="rule-suspect_ua">`, `<details id="quiet"><summary>1 rules matched nothing</summary>`, "<td>wp_probe</td>"}
	at := 0
	for _, w := range order {
		i := strings.Index(page[at:], w)
		if i < 0 {
			t.Fatalf("after byte %d the page lacks %q", at, w)
		}
		at += i + len(w)
	}
	if strings.Contains(page, `id="rule-wp_probe"`) || strings.Count(page, "wp_probe") != 1 {
		t.Errorf("the rule that matched nothing is drawn outside the fold (%d mentions)", strings.Count(page, "wp_probe"))
	}
	golden(t, "summary", b.Bytes())

	// Without clients followed, the summary says so and keeps the rules.
	r.Clients = nil
	b.Reset()
	WriteReplayHTML(&b, r)
	if !strings.Contains(b.String(), "did not follow clients") || !strings.Contains(b.String(), "<td>suspect_ua</td><td>challenge</td>") {
		t.Errorf("summary without clients:\n%s", b.String())
	}
}

func TestStatusPage(t *testing.T) {
	var b bytes.Buffer
	if err := WriteStatusHTML(&b, statusFixture()); err != nil {
		t.Fatal(err)
	}
	checkSelfContained(t, b.String())
	for _, want := range []string{`<div class="big" id="active">3</div>`, `<meta http-equiv="refresh" content="5">`, "login_bruteforce", "rate_limit", "1250/s",
		`id="acted-block">2</div>blocked`, `id="acted-challenge">0</div>challenged`, `id="solve">25%</div>challenges solved (10 of 40 shown)`,
		"<td>challenge</td><td class=\"num\">2.0</td>", `<td><code>ip.src.prefix</code></td><td class="num">1</td>`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status page lacks %q", want)
		}
	}
	golden(t, "status", b.Bytes())
	if strings.Contains(b.String(), "203.0.113.7") || strings.Contains(b.String(), "198.51.100.0") {
		t.Error("the status page, served without the token, names a key's value")
	}
	if i, j := strings.Index(b.String(), `id="summary"`), strings.Index(b.String(), `id="rate"`); i < 0 || i > j {
		t.Error("the status page does not open with the summary")
	}

	// Without challenge metrics, the solve rate's place says so.
	st := statusFixture()
	st.Challenge = nil
	b.Reset()
	WriteStatusHTML(&b, st)
	if !strings.Contains(b.String(), `id="solve">–</div>challenges solved <span class="muted">(not measured: no guardd_challenge_shown_total metric)`) {
		t.Error("no place for the solve rate without challenge metrics")
	}
}

func statusFixture() *Status {
	return &Status{Generated: t0, Uptime: time.Hour, Rules: 8, Active: 3, Decisions: 1250, Interval: 5 * time.Second, P50: 0.0002, P99: 0.0009,
		TailLag: 0.4, LastEvent: t0, Refresh: 5,
		ByAction:  []Count{{Action: "block", N: 2}, {Action: "rate_limit", N: 1}},
		ByRule:    []Count{{"login_bruteforce", "block", 2}, {"aggressive_crawl", "rate_limit", 1}},
		Answered:  []Rate{{"block", 12.5, 4000}, {"challenge", 2, 900}},
		Challenge: &ChallengeStats{Shown: 40, Passed: 10},
		Keys: KeyKinds([]mitigation.Mitigation{
			{ID: 1, Rule: "login_bruteforce", Action: mitigation.ActionBlock, Scope: mitigation.Scope{{Name: "ip.src", Value: "203.0.113.7"}}, Created: t0.Add(-time.Minute), Expires: t0.Add(9 * time.Minute)},
			{ID: 2, Rule: "aggressive_crawl", Action: mitigation.ActionRateLimit, Scope: mitigation.Scope{{Name: "ip.src.prefix", Value: "198.51.100.0/24"}}, Created: t0.Add(-30 * time.Second), Expires: t0.Add(time.Hour)},
		})}
}

// checkSelfContained: nothing in the page may be fetched.
func checkSelfContained(t *testing.T, page string) {
	t.Helper()
	if !strings.Contains(page, `content="default-src 'none'`) {
		t.Error("no Content-Security-Policy forbidding fetches")
	}
	if m := regexp.MustCompile(`(?i)(src|href)\s*=|url\(|<script|<link|@import`).FindString(page); m != "" {
		t.Errorf("the page refers to something to fetch: %q", m)
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden.html")
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s (run with -update after checking the change)", name, path)
	}
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

func TestQuantile(t *testing.T) {
	bounds := []float64{0.001, 0.01, 0.1}
	cum := []float64{50, 90, 100}
	for _, c := range []struct{ q, want float64 }{{0.5, 0.001}, {0.25, 0.0005}, {0.7, 0.0055}, {0.99, 0.091}} {
		if got := Quantile(bounds, cum, 100, c.q); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("Quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if Quantile(bounds, cum, 0, 0.5) != 0 {
		t.Error("empty histogram")
	}
}

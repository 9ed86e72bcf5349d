package decision

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/characteristics/tlsfp"
	"github.com/guardd/guardd/config"
	"github.com/guardd/guardd/ingest/sniff"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/decision/http1"
	"github.com/guardd/guardd/mitigation/throttle"
	"github.com/guardd/guardd/mitigation/verdict"
	"github.com/guardd/guardd/pipeline"
)

// equivalenceRules cover every action (a challenge with each fallback),
// a throttle, and every scope kind: address, prefix, user agent, cookie,
// JA4; two rules share ip.src with different mitigation expressions, so a
// rule whose expression does not match must not hide the other's
// mitigation of the same scope.
var equivalenceRules = map[string]string{
	"addr_block": rule("[ip.src]", 1, "block", "", `startswith(input.http.path, "/login")`, `input.http.method != "POST"`),
	"addr_rl":    rule("[ip.src]", 1, "rate_limit", "", `startswith(input.http.path, "/account")`, `input.http.method == "POST"`),
	"prefix_rl":  rule("[ip.src.prefix]", 30, "rate_limit", "", `startswith(input.http.path, "/search")`, ""),
	"ua_shadow":  rule("[http.user_agent]", 25, "shadowban", "", `contains(input.http.user_agent, "bot")`, `input.http.method == "GET"`),
	"cookie_fw":  rule(`["http.cookies[\"session\"]"]`, 5, "firewall", "", `input.http.path == "/cart"`, ""),
	"ja4_log":    rule("[tls.ja4]", 20, "log", "", `startswith(input.http.path, "/feed")`, ""),
	"ja4_chal":   rule("[tls.ja4]", 15, "challenge", "", `startswith(input.http.path, "/api/")`, ""),
	"addr_chal":  rule("[ip.src]", 3, "challenge", "#   challenge_fallback: block\n", `input.http.path == "/search"`, ""),
	"ua_chal":    rule("[http.user_agent]", 12, "challenge", "#   challenge_fallback: log\n", `input.http.path == "/"`, `true`),
	// Weak signals: their points add up to an anomaly score's challenge
	// or block on the address (origin score, every request covered).
	"score_a":  rule("[ip.src]", 1, "log", "#   anomaly_score: 6\n", `input.http.path == "/feed"`, ""),
	"score_b":  rule("[ip.src]", 1, "log", "#   anomaly_score: 10\n", `input.http.path == "/api/cart"`, ""),
	"throttle": rule("[ip.src]", 1, "throttle", "#   algorithm: token_bucket\n#   burst: 1\n", `startswith(input.http.path, "/api/")`, ""),
}

func rule(chars string, n int, action, extra, count, mitigate string) string {
	timeout := "#   mitigation_timeout: 2m\n"
	if action == "throttle" {
		timeout = ""
	}
	s := fmt.Sprintf("# METADATA\n# title: t\n# custom:\n#   characteristics: %s\n#   period: 1m\n#   requests_per_period: %d\n#   action: %s\n%s%spackage guardd.rules.RULE\n\ncount if %s\n",
		chars, n, action, timeout, extra, count)
	if mitigate != "" {
		s += "\nmitigate if " + mitigate + "\n"
	}
	return s
}

// genRequest is one generated request: the decide request nginx would send
// and the log line it would write.
type genRequest struct {
	ip                                   netip.Addr
	port                                 uint16
	method, uri, ua, accept, cookie, ja4 string
	t                                    time.Time
}

func (q *genRequest) line() []byte {
	b := []byte(`{"msec":"`)
	b = strconv.AppendFloat(b, float64(q.t.UnixMilli())/1000, 'f', 3, 64)
	b = fmt.Appendf(b, `","remote_addr":%q,"remote_port":"%d","request_method":%q,"request_uri":%q,"status":"200","http_host":"shop.example","http_user_agent":%q`,
		q.ip.String(), q.port, q.method, q.uri, q.ua)
	if q.accept != "" {
		b = fmt.Appendf(b, `,"http_accept":%q`, q.accept)
	}
	if q.cookie != "" {
		b = fmt.Appendf(b, `,"http_cookie":%q`, q.cookie)
	}
	return append(b, '}')
}

func (q *genRequest) decide() *http1.Request {
	r := &http1.Request{Method: "GET", Target: "/v1/decide", Host: "shop.example", Minor: 1, Headers: []http1.Header{
		{Name: "x-real-ip", Value: q.ip.String()}, {Name: "x-real-port", Value: strconv.Itoa(int(q.port))},
		{Name: "x-original-method", Value: q.method}, {Name: "x-original-uri", Value: q.uri}, {Name: "user-agent", Value: q.ua}}}
	if q.accept != "" {
		r.Headers = append(r.Headers, http1.Header{Name: "accept", Value: q.accept})
	}
	if q.cookie != "" {
		r.Headers = append(r.Headers, http1.Header{Name: "cookie", Value: q.cookie})
	}
	return r
}

// generate makes n requests from clients in three /24s and two IPv6 /64s,
// each client with its own user agent, JA4 and session, an allowlisted /28
// and user agent among them.
func generate(n int, seed uint64, t0 time.Time) []genRequest {
	rnd := rand.New(rand.NewPCG(seed, 1))
	type client struct {
		ip              netip.Addr
		ua, ja4, cookie string
	}
	uas := []string{"Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0", "Mozilla/5.0 (Macintosh) Safari/605", "curl/8.5.0",
		"python-requests/2.31", "scanbot/1.0", "crawlbot/2.0 (+https://crawl.example)", "UptimeMonitor/1.0"}
	ja4s := []string{"t13d1516h2_8daaf6152771_02713d6af862", "t13d1715h2_5b57614c22b0_3d5424432f57", "t12d0102h1_0f1e2d3c4b5a_000000000000",
		"t13d0910h1_aaaaaaaaaaaa_bbbbbbbbbbbb"}
	nets := []string{"203.0.113.", "198.51.100.", "192.0.2."}
	var clients []client
	for i := range 48 {
		var ip netip.Addr
		if i%8 == 7 {
			ip = netip.MustParseAddr(fmt.Sprintf("2001:db8:%x::%x", i%2, i+1))
		} else {
			ip = netip.MustParseAddr(nets[i%3] + strconv.Itoa(1+rnd.IntN(40)))
		}
		c := client{ip: ip, ua: uas[rnd.IntN(len(uas))], ja4: ja4s[rnd.IntN(len(ja4s))]}
		if rnd.IntN(4) > 0 {
			c.cookie = "session=s" + strconv.Itoa(rnd.IntN(12)) + "; theme=dark"
		}
		clients = append(clients, c)
	}
	paths := []string{"/", "/login", "/account", "/search", "/search?q=shoes", "/cart", "/api/items", "/api/cart", "/feed", "/static/app.js"}
	accepts := []string{"", "text/html,application/xhtml+xml,*/*;q=0.8", "application/json", "*/*", "TEXT/HTML"}
	out := make([]genRequest, n)
	t := t0
	for i := range out {
		c := clients[rnd.IntN(len(clients))]
		if rnd.IntN(3) == 0 { // a burst from the client before
			c = clients[(i*7)%len(clients)]
		}
		t = t.Add(time.Duration(rnd.IntN(400)) * time.Millisecond)
		m := "GET"
		switch rnd.IntN(8) {
		case 0, 1:
			m = "POST"
		case 2:
			m = "HEAD"
		}
		out[i] = genRequest{ip: c.ip, port: uint16(1024 + i), method: m, uri: paths[rnd.IntN(len(paths))], ua: c.ua,
			accept: accepts[rnd.IntN(len(accepts))], cookie: c.cookie, ja4: c.ja4, t: t}
	}
	return out
}

type lines []genRequest

func (ls lines) Read(ctx context.Context, w *pipeline.Writer) error {
	for i := range ls {
		if err := w.Line(ls[i].line(), "gen", int64(i+1)); err != nil {
			return err
		}
	}
	return nil
}

// TestVerdictEquivalence drives random requests through both callers of
// verdict.Decide, the decision API (Handler.Decide, on the store's scope
// shapes) and a replay (pipeline.Run with a Report, on its own records),
// with the same mitigations in force, and compares their decisions.
func TestVerdictEquivalence(t *testing.T) {
	n := 12000
	if testing.Short() {
		n = 3000
	}
	dir := t.TempDir()
	for name, src := range equivalenceRules {
		if err := os.WriteFile(filepath.Join(dir, name+".rego"), []byte(strings.Replace(src, "RULE", name, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Parse("t.yml", []byte(fmt.Sprintf("rules: {disable_builtin: true, dirs: [%q]}\nlog: {json: true}\n", dir)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.Build(cfg, pipeline.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	holder := pipeline.NewHolder(p)
	defer holder.Close()
	allow := mitigation.Allowlist{Prefixes: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/29")},
		Values: []mitigation.Pair{{Name: "http.user_agent", Value: "UptimeMonitor/1.0"}}}
	store, err := mitigation.New(mitigation.Config{MaxEntries: 1 << 20, Allowlist: allow}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	limits := func() *throttle.Limiter {
		lim, err := throttle.New(throttle.Config{})
		if err != nil {
			t.Fatal(err)
		}
		return lim
	}
	replayLimits, err := limits().Build(p.Rules())
	if err != nil {
		t.Fatal(err)
	}

	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	reqs := generate(n, 20, t0)
	// The JA4s reach both through the sniffer's join, by address and port.
	join := sniff.NewJoin(24*time.Hour, 1<<20)
	for i := range reqs {
		q := &reqs[i]
		join.Put(&sniff.Record{Proto: sniff.ProtoTLS, Time: q.t, Src: q.ip, SrcPort: q.port, Fingerprint: tlsfp.Fingerprint{JA4: q.ja4}})
	}
	h, err := New(Config{Store: store, Rules: p.Rules(), Throttle: limits(), Join: join})
	if err != nil {
		t.Fatal(err)
	}
	// The same with every request cleared: no challenge, and no fallback of
	// one, is left; everything else is as without clearances.
	hc, err := New(Config{Store: store, Rules: p.Rules(), Throttle: limits(), Join: join, Clearances: clearAll{}})
	if err != nil {
		t.Fatal(err)
	}
	s, sc := h.pool.Get().(*scratch), hc.pool.Get().(*scratch)
	rep := pipeline.NewReport(true)
	rep.SimulateThrottle(replayLimits)
	actions := map[string]mitigation.Action{}
	for _, r := range p.Rules().Rules() {
		actions[r.Name] = r.Action
	}
	seen := map[string]int{}
	i := 0
	rep.OnVerdict = func(client netip.Addr, at time.Time, want verdict.Decision) {
		q := &reqs[i]
		i++
		if client != q.ip || !at.Equal(q.t) {
			t.Fatalf("request %d: replay judged %s at %s, want %s at %s", i, client, at, q.ip, q.t)
		}
		got, err := h.Decide(q.decide(), s, at)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		key := "allow"
		if !got.Allow {
			key = got.Action.String()
		}
		seen[key]++
		if got.Rule == "anomaly_score" {
			seen["anomaly score "+key]++
		}
		if store.Allowlisted(&s.ev) {
			seen["allowlisted"]++
		}
		if q.method != "GET" && q.method != "HEAD" {
			seen["not a page view"]++
		}
		// A challenge, or a challenge's fallback: a rule's, or an anomaly
		// score's (which challenges or blocks).
		challenged := !got.Allow && (actions[got.Rule] == mitigation.ActionChallenge ||
			got.Rule == "anomaly_score" && got.Action != mitigation.ActionBlock)
		if challenged && got.Action != mitigation.ActionChallenge {
			seen["challenge fallback"]++
		}
		cleared, err := hc.Decide(q.decide(), sc, at)
		if err != nil {
			t.Fatal(err)
		}
		if cleared.Action == mitigation.ActionChallenge || (!challenged && !sameDecision(cleared.Decision, got.Decision)) {
			t.Errorf("request %d, cleared: %+v, without clearances %+v", i, cleared, got)
		}
		if !sameDecision(got.Decision, want) {
			t.Errorf("request %d (%s %s %s ua %q accept %q cookie %q ja4 %s at %s):\ndecision API %+v\nreplay       %+v",
				i, q.ip, q.method, q.uri, q.ua, q.accept, q.cookie, q.ja4, q.t.Format(time.StampMilli), got, want)
			if t.Failed() && i > 50 {
				t.FailNow()
			}
		}
	}
	if _, err := pipeline.Run(context.Background(), pipeline.Config{Pipelines: holder, Store: store, Join: join, Workers: 2, Replay: true,
		Report: rep, Now: func() time.Time { return t0.Add(24 * time.Hour) }}, lines(reqs)); err != nil {
		t.Fatal(err)
	}
	if i != n {
		t.Fatalf("%d verdicts for %d requests", i, n)
	}
	made := map[string]int{}
	for _, m := range rep.Mitigations() {
		made[m.Rule]++
	}
	for name := range equivalenceRules {
		if made[name] == 0 && name != "throttle" && !strings.HasPrefix(name, "score_") {
			t.Errorf("rule %s made no mitigation: the test does not cover it", name)
		}
	}
	t.Logf("mitigations per rule: %v", made)
	t.Logf("%d requests: %v", n, seen)
	for _, k := range []string{"allow", "block", "rate_limit", "shadowban", "firewall", "throttle", "challenge", "allowlisted", "not a page view", "challenge fallback", "anomaly score challenge", "anomaly score block"} {
		if seen[k] == 0 {
			t.Errorf("no request decided %s: the test does not cover it", k)
		}
	}
}

// sameDecision compares two decisions but for the throttle's Retry, to
// which the decision API adds the rule's jitter and a replay does not, and
// the throttle verdict's detail but for Refused.
func sameDecision(a, b verdict.Decision) bool {
	if a.Throttle.Refused != b.Throttle.Refused {
		return false
	}
	if a.Action == mitigation.ActionThrottle {
		a.Retry, b.Retry = 0, 0
	}
	a.Throttle, b.Throttle = throttle.Verdict{}, throttle.Verdict{}
	return reflect.DeepEqual(a, b)
}

// clearAll holds every request cleared.
type clearAll struct{}

func (clearAll) Cleared(*characteristics.Event, time.Time) bool { return true }

// tripCounter adds a mitigation on the request's address when it counts
// it, as a request-time rule's trip does (pipeline.RequestCounter).
type tripCounter struct{ store *mitigation.Store }

func (c tripCounter) CountRequest(ev *characteristics.Event) {
	c.store.Add(mitigation.Mitigation{Rule: "manual", Origin: mitigation.OriginManual, Action: mitigation.ActionBlock,
		Scope: mitigation.Scope{{Name: "ip.src", Value: ev.IP.String()}}, Expires: ev.Time.Add(time.Minute)}, ev.Time)
}

// TestDecideAfterCount: the request whose count trips a rule is itself
// refused, even when the trip adds the store's first scope of its shape.
func TestDecideAfterCount(t *testing.T) {
	store, err := mitigation.New(mitigation.Config{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	h, err := New(Config{Store: store, Counter: tripCounter{store}})
	if err != nil {
		t.Fatal(err)
	}
	s := h.pool.Get().(*scratch)
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	d, err := h.Decide(decideReq("203.0.113.9", "GET", "/", ""), s, now)
	if err != nil || d.Allow || d.Action != mitigation.ActionBlock {
		t.Fatalf("%+v %v: want the request that tripped blocked", d, err)
	}
}

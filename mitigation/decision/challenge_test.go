package decision

import (
	"crypto/sha256"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/guardd/guardd/challenge"
	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/decision/http1"
	"github.com/guardd/guardd/rules"
)

const challengeRule = `# METADATA
# title: test challenge
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: challenge
#   challenge_difficulty: 6
#   mitigation_timeout: 10m
package guardd.rules.doubt

count if input.http.path == "/search"

mitigate if true
`

const challengeBlockRule = `# METADATA
# title: test challenge, block fallback, cookie tier
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: challenge
#   challenge_tier: cookie
#   challenge_fallback: block
#   mitigation_timeout: 10m
package guardd.rules.doubt_cookie

count if input.http.path == "/search"

mitigate if true
`

const browserUA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

// challengeSetup: 192.0.2.0/24 addresses are challenged by rule doubt,
// 198.51.100.5 by doubt_cookie.
func challengeSetup(t testing.TB, maxUnsolved int) (*Handler, *mitigation.Store, *challenge.Gate) {
	t.Helper()
	set, err := rules.Load(fstest.MapFS{"doubt.rego": {Data: []byte(challengeRule)}, "doubt_cookie.rego": {Data: []byte(challengeBlockRule)}}, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := mitigation.New(mitigation.Config{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []mitigation.Mitigation{
		{Rule: "doubt", Action: mitigation.ActionChallenge, Scope: mitigation.Scope{{Name: "ip.src.prefix", Value: "192.0.2.0/24"}}, Expires: now.Add(48 * time.Hour)},
		{Rule: "doubt_cookie", Action: mitigation.ActionChallenge, Scope: mitigation.Scope{{Name: "ip.src", Value: "198.51.100.5"}}, Expires: now.Add(10 * time.Minute)},
	} {
		if _, ok, err := store.Add(m, now); err != nil || !ok {
			t.Fatal(err)
		}
	}
	var secret [challenge.KeySize]byte
	secret[0] = 7
	kr, _ := challenge.NewKeyring(secret)
	gate, err := challenge.New(challenge.Config{Keys: kr, MaxUnsolved: maxUnsolved, Escalator: &Escalation{Store: store}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{Store: store, Rules: set, Challenge: gate, Now: func() time.Time { return now.Add(time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	return h, store, gate
}

// browserReq is a decide request as nginx sends it for a browser's
// navigation.
func browserReq(ip, method, uri, ua, accept, cookie string) *http1.Request {
	r := &http1.Request{Method: "GET", Target: "/v1/decide", Host: "guardd", Minor: 1, Received: time.Now(), Headers: []http1.Header{
		{Name: hClientIP, Value: ip}, {Name: hMethod, Value: method}, {Name: hURI, Value: uri}, {Name: "user-agent", Value: ua}}}
	if accept != "" {
		r.Headers = append(r.Headers, http1.Header{Name: "accept", Value: accept})
	}
	if cookie != "" {
		r.Headers = append(r.Headers, http1.Header{Name: "cookie", Value: cookie})
	}
	return r
}

const htmlAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

func decideNow(t testing.TB, h *Handler, r *http1.Request, at time.Time) Decision {
	t.Helper()
	s := h.pool.Get().(*scratch)
	d, err := h.Decide(r, s, at)
	if err != nil {
		t.Fatal(err)
	}
	d.Token = append([]byte(nil), d.Token...)
	h.pool.Put(s)
	return d
}

// solveURI answers the challenge of decision d as the page's script does.
func solveURI(t testing.TB, d Decision, ret string) string {
	t.Helper()
	c := string(d.Token)
	n := ""
	if d.Tier == rules.TierProofOfWork {
		n = challenge.Solve(c, d.Difficulty)
	}
	return challenge.SolveURL(c, n, ret)
}

func TestChallengeFlow(t *testing.T) {
	h, _, _ := challengeSetup(t, 0)
	at := now.Add(time.Minute)
	// A page view is challenged: the page, with a signed challenge.
	d := decideNow(t, h, browserReq("192.0.2.10", "GET", "/search?q=books", browserUA, htmlAccept, ""), at)
	if d.Allow || d.Action != mitigation.ActionChallenge || len(d.Token) == 0 || d.Difficulty != 6 || d.Tier != rules.TierProofOfWork {
		t.Fatalf("page view: %+v", d)
	}
	// The solve request goes to @guardd: a clearance.
	uri := solveURI(t, d, "/search?q=books")
	sd := decideNow(t, h, browserReq("192.0.2.10", "GET", uri, browserUA, htmlAccept, ""), at)
	if !sd.Solved || sd.Rule != "doubt" {
		t.Fatalf("solve: %+v", sd)
	}
	cookie := challenge.DefaultCookie + "=" + string(sd.Token)
	tests := []struct {
		name, ip, method, uri, ua, accept, cookie string
		want                                      string // "allow", an action, or "page"
	}{
		{"cleared", "192.0.2.10", "GET", "/search?q=more", browserUA, htmlAccept, "a=b; " + cookie, "allow"},
		{"cleared POST", "192.0.2.10", "POST", "/cart", browserUA, "*/*", cookie, "allow"},
		{"cleared, same /24", "192.0.2.99", "GET", "/", browserUA, htmlAccept, cookie, "allow"},
		{"another user agent", "192.0.2.10", "GET", "/", "python-requests/2.31.0", htmlAccept, cookie, "page"},
		{"no clearance", "192.0.2.11", "GET", "/", browserUA, htmlAccept, "", "page"},
		{"POST gets the fallback", "192.0.2.11", "POST", "/search", browserUA, htmlAccept, "", "rate_limit"},
		{"JSON gets the fallback", "192.0.2.11", "GET", "/api/items", browserUA, "application/json", "", "rate_limit"},
		{"curl's Accept gets the fallback", "192.0.2.11", "GET", "/", "curl/8.5.0", "*/*", "", "rate_limit"},
		// As a log line has no Accept: replay and the decision API judge
		// it alike (verdict.PageView).
		{"no Accept header is a page view", "192.0.2.11", "GET", "/", "curl/8.5.0", "", "", "page"},
		{"block fallback", "198.51.100.5", "POST", "/", browserUA, "", "", "block"},
		{"not challenged", "203.0.113.1", "GET", "/", "curl/8.5.0", "*/*", "", "allow"},
		{"reserved path", "203.0.113.1", "GET", "/.guardd/other", browserUA, htmlAccept, "", "block"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := decideNow(t, h, browserReq(tc.ip, tc.method, tc.uri, tc.ua, tc.accept, tc.cookie), at)
			got := "allow"
			switch {
			case d.Allow:
			case d.Action == mitigation.ActionChallenge && len(d.Token) > 0:
				got = "page"
			default:
				got = d.Action.String()
			}
			if got != tc.want {
				t.Errorf("got %s (%+v), want %s", got, d, tc.want)
			}
		})
	}
	// Another /24 and one changed byte are challenged again.
	other := decideNow(t, h, browserReq("192.0.3.10", "GET", "/", browserUA, htmlAccept, cookie), at)
	if !other.Allow {
		t.Fatalf("192.0.3.10 has no mitigation: %+v", other)
	}
	tampered := []byte(cookie)
	i := len(tampered) - 10
	if tampered[i] == 'A' {
		tampered[i] = 'B'
	} else {
		tampered[i] = 'A'
	}
	if d := decideNow(t, h, browserReq("192.0.2.10", "GET", "/", browserUA, htmlAccept, string(tampered)), at); d.Allow {
		t.Error("a tampered clearance is accepted")
	}
	// After its expiry, the clearance is refused.
	if d := decideNow(t, h, browserReq("192.0.2.10", "GET", "/", browserUA, htmlAccept, cookie), at.Add(challenge.DefaultClearanceTTL+time.Second)); d.Allow {
		t.Error("an expired clearance is accepted")
	}
}

func TestChallengeRespond(t *testing.T) {
	h, _, _ := challengeSetup(t, 0)
	url := serve(t, h)
	at := now.Add(time.Minute)
	page := func(dec, uri string) (*http.Response, string) {
		hd := http.Header{}
		hd.Set(HeaderDecision, dec)
		hd.Set(HeaderMethod, "GET")
		hd.Set(HeaderURI, uri)
		hd.Set(HeaderForwardedProto, "https")
		return get(t, "GET", url+"/v1/respond", hd)
	}
	d := decideNow(t, h, browserReq("192.0.2.10", "GET", "/search?q=books", browserUA, htmlAccept, ""), at)
	resp, body := page(encode(d), "/search?q=books")
	if resp.StatusCode != http.StatusForbidden || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("page: %d %v", resp.StatusCode, resp.Header)
	}
	if !strings.Contains(body, `data-challenge="`+string(d.Token)+`"`) || !strings.Contains(body, `data-return="/search?q=books"`) || !strings.Contains(body, `data-difficulty="6"`) {
		t.Errorf("the page lacks its challenge:\n%s", body)
	}
	uri := solveURI(t, d, "/search?q=books")
	sd := decideNow(t, h, browserReq("192.0.2.10", "GET", uri, browserUA, htmlAccept, ""), at)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest("GET", url+"/v1/respond", nil)
	req.Header.Set(HeaderDecision, encode(sd))
	req.Header.Set(HeaderURI, uri)
	req.Header.Set(HeaderForwardedProto, "https")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	c := resp.Header.Get("Set-Cookie")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/search?q=books" {
		t.Errorf("solved: %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	for _, want := range []string{challenge.DefaultCookie + "=" + string(sd.Token), "HttpOnly", "SameSite=Lax", "Path=/", "Secure", "Max-Age=86400"} {
		if !strings.Contains(c, want) {
			t.Errorf("Set-Cookie %q lacks %s", c, want)
		}
	}
	// Over plain http, no Secure.
	req.Header.Set(HeaderForwardedProto, "http")
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if strings.Contains(resp.Header.Get("Set-Cookie"), "Secure") {
		t.Error("Secure cookie over http")
	}
	// The fallback and the cookie tier.
	fb := decideNow(t, h, browserReq("192.0.2.11", "POST", "/search", browserUA, htmlAccept, ""), at)
	if resp, _ := page(encode(fb), "/search"); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("fallback: %d %v", resp.StatusCode, resp.Header)
	}
	ck := decideNow(t, h, browserReq("198.51.100.5", "GET", "/x", browserUA, htmlAccept, ""), at)
	resp, body = page(encode(ck), "/x")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, `http-equiv="refresh"`) {
		t.Errorf("cookie tier: %d\n%s", resp.StatusCode, body)
	}
	// A failed solve (expired) is a new page for the same return URL.
	late := decideNow(t, h, browserReq("192.0.2.10", "GET", uri, browserUA, htmlAccept, ""), at.Add(time.Hour))
	if late.Action != mitigation.ActionChallenge || late.Solved || len(late.Token) == 0 {
		t.Fatalf("expired solve: %+v", late)
	}
	if resp, body := page(encode(late), uri); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, `data-return="/search?q=books"`) {
		t.Errorf("re-challenge: %d\n%s", resp.StatusCode, body)
	}
}

func TestChallengeEscalation(t *testing.T) {
	h, store, _ := challengeSetup(t, 2)
	at := now.Add(time.Minute)
	r := browserReq("192.0.2.50", "GET", "/", "scraper/1.0", htmlAccept, "")
	for i := 0; i < 2; i++ {
		if d := decideNow(t, h, r, at); d.Action != mitigation.ActionChallenge {
			t.Fatalf("challenge %d: %+v", i, d)
		}
	}
	if d := decideNow(t, h, r, at); d.Action != mitigation.ActionBlock {
		t.Fatalf("third unsolved challenge: %+v", d)
	}
	if d := decideNow(t, h, r, at); d.Action != mitigation.ActionBlock {
		t.Fatalf("after escalation: %+v; want the block mitigation", d)
	}
	// A wrong proof is blocked at once.
	d := decideNow(t, h, browserReq("192.0.2.60", "GET", "/", browserUA, htmlAccept, ""), at)
	c := string(d.Token)
	bad := 0
	for challenge.LeadingZeroBits(sha(c+strconv.Itoa(bad))) >= d.Difficulty {
		bad++
	}
	sd := decideNow(t, h, browserReq("192.0.2.60", "GET", challenge.SolveURL(c, strconv.Itoa(bad), "/"), browserUA, htmlAccept, ""), at)
	if sd.Action != mitigation.ActionBlock {
		t.Fatalf("wrong proof: %+v", sd)
	}
	found := false
	want := mitigation.Scope{{Name: "ip.src", Value: "192.0.2.60"}}
	for _, m := range store.List(at) {
		if m.Action == mitigation.ActionBlock && m.Scope.Equal(want) {
			found = true
		}
	}
	if !found {
		t.Error("no block mitigation for the wrong proof")
	}
}

// TestDecideClearedAllocs: under a challenge mitigation, a cleared request,
// one that gets the fallback and one that gets a signed challenge for the
// page are decided without allocating.
func TestDecideClearedAllocs(t *testing.T) {
	h, _, gate := challengeSetup(t, -1) // pages shown are never escalated here
	at := now.Add(time.Minute)
	tok := gate.IssueClearance(challenge.Subject{IP: netip.MustParseAddr("192.0.2.10"), UserAgent: browserUA}, at)
	for _, tc := range []struct{ name, ip, method, cookie string }{
		{"cleared", "192.0.2.10", "GET", "session=x; " + challenge.DefaultCookie + "=" + tok},
		{"not cleared, POST: the fallback", "192.0.2.10", "POST", ""},
		{"not cleared, GET: a page", "192.0.2.11", "GET", "session=x"},
	} {
		name := tc.name
		r := browserReq(tc.ip, tc.method, "/search?q=1", browserUA, htmlAccept, tc.cookie)
		s := h.pool.Get().(*scratch)
		d, _ := h.Decide(r, s, at)
		if (name == "cleared") != d.Allow {
			t.Fatalf("%s: %+v", name, d)
		}
		if n := testing.AllocsPerRun(200, func() { h.Decide(r, s, at) }); n != 0 {
			t.Errorf("%s: Decide allocates %v times", name, n)
		}
	}
}

// BenchmarkDecideClearance: the same requests, each from one of 1,000,000
// distinct addresses of 10.0.0.0/8 presenting its own valid clearance,
// decided first without a challenge mitigation (the cookie is not looked
// at), then under a challenge over all of 10.0.0.0/8 (every clearance
// checked).
func BenchmarkDecideClearance(b *testing.B) {
	h, store, gate := challengeSetup(b, 0)
	at := now.Add(time.Minute)
	en, err := characteristics.NewEnricher(characteristics.EnrichConfig{PrefixV4: 8}) // 10.0.0.0/8 is one ip.src.prefix
	if err != nil {
		b.Fatal(err)
	}
	h.enricher = en
	const n = 1000000
	reqs := make([]*http1.Request, 0, n)
	for i := range n {
		ip := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		tok := gate.IssueClearance(challenge.Subject{IP: ip, UserAgent: browserUA}, at)
		reqs = append(reqs, browserReq(ip.String(), "GET", "/products/7?x=1", browserUA, htmlAccept, "session=abc; "+challenge.DefaultCookie+"="+tok))
	}
	run := func(name string) {
		b.Run(name, func(b *testing.B) {
			s := h.pool.Get().(*scratch)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				d, _ := h.Decide(reqs[i%n], s, at)
				if !d.Allow {
					b.Fatal("not allowed")
				}
				i++
			}
		})
	}
	run("no challenge")
	store.Add(mitigation.Mitigation{Rule: "doubt", Action: mitigation.ActionChallenge, Scope: mitigation.Scope{{Name: "ip.src.prefix", Value: "10.0.0.0/8"}}, Expires: now.Add(10 * time.Minute)}, now)
	run("1M clearances checked")
}

func sha(s string) [32]byte { return sha256.Sum256([]byte(s)) }

// TestDocsChallengeRule: the example rule of docs/rules.md "Challenges"
// loads, as a challenge with its fallback.
func TestDocsChallengeRule(t *testing.T) {
	data, err := os.ReadFile("../../docs/rules.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range strings.Split(string(data), "```rego\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		if !strings.Contains(block, "action: challenge") {
			continue
		}
		set, err := rules.Load(fstest.MapFS{"example.rego": {Data: []byte(block)}}, rules.Options{})
		if err != nil {
			t.Fatal(err)
		}
		r := set.Rules()[0]
		if r.Action != mitigation.ActionChallenge || r.Challenge.Fallback != mitigation.ActionRateLimit || r.Challenge.Difficulty != 18 {
			t.Errorf("docs example: %s %+v", r.Action, r.Challenge)
		}
		return
	}
	t.Fatal("docs/rules.md has no challenge rule example")
}

// FuzzChallengeDecide: whatever a client puts in the URI (the solve
// endpoint's query above all), its cookies and headers, a decision under a
// challenge is made without a panic, round-trips through /v1/respond's
// parser, and only a solved challenge yields a clearance.
func FuzzChallengeDecide(f *testing.F) {
	h, _, _ := challengeSetup(f, 0)
	at := now.Add(time.Minute)
	f.Add("192.0.2.10", "GET", "/.guardd/solve?c=AAAA&n=1&r=%2F", browserUA, htmlAccept, "")
	f.Add("192.0.2.10", "GET", "/search?q=1", browserUA, htmlAccept, challenge.DefaultCookie+"=AQ")
	f.Add("198.51.100.5", "HEAD", "/.guardd/", "", "text/HTML", "")
	f.Add("192.0.2.10", "POST", "/.guardd/solve", browserUA, "*/*", "guardd_clearance=;guardd_clearance=x")
	f.Fuzz(func(t *testing.T, ip, method, uri, ua, accept, cookie string) {
		if len(uri)+len(cookie)+len(ua)+len(accept) > 16384 {
			return
		}
		r := browserReq(ip, method, uri, ua, accept, cookie)
		s := h.pool.Get().(*scratch)
		defer h.pool.Put(s)
		d, err := h.Decide(r, s, at)
		if err != nil || d.Allow {
			return
		}
		enc := encode(d)
		p, err := parseDecision(enc)
		if err != nil {
			t.Fatalf("decision %q does not parse: %v", enc, err)
		}
		if p.solved != d.Solved || p.token != string(d.Token) {
			t.Fatalf("decision %q: token lost", enc)
		}
		if d.Solved && !strings.HasPrefix(uri, challenge.SolvePath+"?") {
			t.Fatalf("a clearance for %q", uri)
		}
	})
}

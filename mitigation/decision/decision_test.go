package decision

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/decision/http1"
	"github.com/guardd/guardd/rules"
	"github.com/guardd/guardd/shadowban"
)

const loginRule = `# METADATA
# title: test login
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: rate_limit
#   mitigation_timeout: 10m
package guardd.rules.login

count if input.http.path == "/login"

mitigate if startswith(input.http.path, "/login")
`

var now = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

func setup(t testing.TB) (*Handler, *mitigation.Store) {
	t.Helper()
	set, err := rules.Load(fstest.MapFS{"login.rego": {Data: []byte(loginRule)}}, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := mitigation.New(mitigation.Config{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	add := func(m mitigation.Mitigation) {
		if _, ok, err := store.Add(m, now); err != nil || !ok {
			t.Fatalf("add %+v: %v %v", m, ok, err)
		}
	}
	add(mitigation.Mitigation{Rule: "login", Action: mitigation.ActionRateLimit, Origin: "rule",
		Scope: mitigation.Scope{{Name: "ip.src", Value: "203.0.113.7"}}, Expires: now.Add(10 * time.Minute)})
	add(mitigation.Mitigation{Rule: "manual", Action: mitigation.ActionBlock, Origin: "api",
		Scope: mitigation.Scope{{Name: "ip.src.prefix", Value: "198.51.100.0/24"}}, Expires: now.Add(time.Hour)})
	add(mitigation.Mitigation{Rule: "invite-spam", Action: mitigation.ActionShadowBan, Origin: "api",
		Scope: mitigation.Scope{{Name: `http.cookies["session"]`, Value: "spammer"}}, Expires: now.Add(time.Hour)})
	sb, _ := shadowban.New(shadowban.Config{Routes: []shadowban.Route{{Method: "POST", Path: "/api/invite", Body: `{"ok":true}`}}})
	h, err := New(Config{Store: store, Rules: set, Shadow: sb, Now: func() time.Time { return now.Add(time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	return h, store
}

// serve runs h on an http1 server on loopback and returns its base URL.
func serve(t *testing.T, h *Handler) string {
	t.Helper()
	srv, err := http1.New(http1.Config{Handler: h})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		ln.Close()
	})
	return "http://" + ln.Addr().String()
}

// decideHeaders are what nginx's /_guardd location sends.
func decideHeaders(ip, method, uri, cookie string) http.Header {
	hd := http.Header{}
	if ip != "" {
		hd.Set(HeaderClientIP, ip)
	}
	hd.Set(HeaderClientPort, "51000")
	hd.Set(HeaderMethod, method)
	hd.Set(HeaderURI, uri)
	hd.Set("User-Agent", "test")
	if cookie != "" {
		hd.Set("Cookie", cookie)
	}
	return hd
}

// get sends a request and returns the answer with its body read.
func get(t *testing.T, method, url string, hd http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = hd
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// decideReq is the http1 form of decideHeaders, for in-process calls.
func decideReq(ip, method, uri, cookie string) *http1.Request {
	r := &http1.Request{Method: "GET", Target: "/v1/decide", Host: "guardd", Minor: 1, Received: time.Now()}
	for name, vs := range decideHeaders(ip, method, uri, cookie) {
		r.Headers = append(r.Headers, http1.Header{Name: strings.ToLower(name), Value: vs[0]})
	}
	return r
}

func TestDecideAndRespond(t *testing.T) {
	h, _ := setup(t)
	url := serve(t, h)
	tests := []struct {
		name, ip, method, uri, cookie string
		decide                        int
		action                        string
		respond                       int
		body                          string
		headers                       map[string]string
	}{
		{"unknown client allowed", "192.0.2.1", "GET", "/", "", 204, "", 0, "", nil},
		{"rate limited on login", "203.0.113.7", "POST", "/login?next=/", "", 401, "rate_limit", 429, "Too Many Requests",
			map[string]string{"Retry-After": "540", "RateLimit-Policy": `"login";q=10;w=60`, "RateLimit": `"login";r=0;t=540`}},
		{"mitigation expression excludes other paths", "203.0.113.7", "GET", "/", "", 204, "", 0, "", nil},
		{"manual prefix block", "198.51.100.77", "GET", "/anything", "", 401, "block", 403, "Forbidden", nil},
		{"mapped address", "::ffff:198.51.100.77", "GET", "/", "", 401, "block", 403, "Forbidden", nil},
		{"shadow-banned cookie", "192.0.2.9", "POST", "/api/invite", "a=1; session=spammer", 401, "shadowban", 200, `{"ok":true}`, nil},
		{"other cookie", "192.0.2.9", "POST", "/api/invite", "session=fine", 204, "", 0, "", nil},
		{"no client header allowed", "", "GET", "/", "", 204, "", 0, "", nil},
		{"garbage client allowed", "not-an-ip", "GET", "/", "", 204, "", 0, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, _ := get(t, "GET", url+"/v1/decide", decideHeaders(tt.ip, tt.method, tt.uri, tt.cookie))
			if resp.StatusCode != tt.decide {
				t.Fatalf("decide = %d, want %d", resp.StatusCode, tt.decide)
			}
			dec := resp.Header.Get(HeaderDecision)
			if tt.action == "" {
				if dec != "" {
					t.Fatalf("allowed with decision %q", dec)
				}
				return
			}
			if !strings.HasPrefix(dec, tt.action+";") {
				t.Fatalf("decision %q, want action %s", dec, tt.action)
			}
			hd := http.Header{}
			hd.Set(HeaderDecision, dec)
			hd.Set(HeaderMethod, tt.method)
			hd.Set(HeaderURI, tt.uri)
			resp, body := get(t, tt.method, url+"/v1/respond", hd)
			if resp.StatusCode != tt.respond || !strings.Contains(body, tt.body) {
				t.Fatalf("respond = %d %q, want %d %q", resp.StatusCode, body, tt.respond, tt.body)
			}
			for k, v := range tt.headers {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestRespondRejectsForgedDecision(t *testing.T) {
	h, _ := setup(t)
	url := serve(t, h)
	for _, d := range []string{"", "allow", "rate_limit;retry=-3", "rate_limit;q=abc"} {
		hd := http.Header{}
		hd.Set(HeaderDecision, d)
		if resp, _ := get(t, "GET", url+"/v1/respond", hd); resp.StatusCode != http.StatusForbidden {
			t.Errorf("decision %q: %d, want 403", d, resp.StatusCode)
		}
	}
	if resp, _ := get(t, "GET", url+"/elsewhere", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown path: %d", resp.StatusCode)
	}
}

// A decide request that waited past ShedAfter is shed without evaluation,
// and /v1/respond renders that as 503 with Retry-After.
func TestShed(t *testing.T) {
	h, _ := setup(t)
	r := decideReq("192.0.2.1", "GET", "/", "")
	r.Received = time.Now().Add(-time.Second)
	var w http1.Response
	h.ServeHTTP1(&w, r)
	if w.Status() != http.StatusUnauthorized {
		t.Fatalf("shed decide = %d", w.Status())
	}
	url := serve(t, h)
	hd := http.Header{}
	hd.Set(HeaderDecision, "shed;retry=1")
	resp, _ := get(t, "GET", url+"/v1/respond", hd)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("respond shed: %d %v", resp.StatusCode, resp.Header)
	}
}

func TestDecideAllocs(t *testing.T) {
	h, _ := setup(t)
	r := decideReq("203.0.113.7", "POST", "/login", "session=x; theme=dark")
	s := h.pool.Get().(*scratch)
	h.Decide(r, s, now)
	if n := testing.AllocsPerRun(200, func() { h.Decide(r, s, now) }); n != 0 {
		t.Errorf("Decide allocates %v times", n)
	}
}

// BenchmarkDecide: a request from an address without mitigations (most
// traffic: no rule is evaluated), and one whose address has a rule's
// mitigation (the rules' mitigation expressions are evaluated, here the
// built-in library and the login rule), with 100,000 mitigations in the table.
func BenchmarkDecide(b *testing.B) {
	h, store := setup(b)
	builtin, err := rules.Builtin(rules.Options{})
	if err != nil {
		b.Fatal(err)
	}
	login, _ := rules.Load(fstest.MapFS{"login.rego": {Data: []byte(loginRule)}}, rules.Options{})
	all, err := rules.Merge(builtin, login)
	if err != nil {
		b.Fatal(err)
	}
	h.SetRules(all)
	for i := range 100000 {
		ip := []byte("10.0.0.0")
		ip = append(ip[:0], "10."...)
		store.Add(mitigation.Mitigation{Rule: "manual", Action: mitigation.ActionBlock, Origin: "api",
			Scope: mitigation.Scope{{Name: "ip.src", Value: string(ip) + itoa(i>>16) + "." + itoa((i>>8)&255) + "." + itoa(i&255)}}, Expires: now.Add(time.Hour)}, now)
	}
	for _, bc := range []struct{ name, ip, uri string }{
		{"no mitigation", "192.0.2.44", "/products/7?x=1"},
		{"rule mitigation", "203.0.113.7", "/login?next=/"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := decideReq(bc.ip, "POST", bc.uri, "session=abc; theme=dark")
			s := h.pool.Get().(*scratch)
			b.ReportAllocs()
			for b.Loop() {
				h.Decide(r, s, now)
			}
		})
	}
}

func itoa(i int) string {
	const d = "0123456789"
	if i < 10 {
		return d[i : i+1]
	}
	return itoa(i/10) + d[i%10:i%10+1]
}

// FuzzDecideHeaders: whatever nginx (or someone reaching guardd) sends, a
// decision is made without a panic, and decisions round-trip through
// /v1/respond's parser.
func FuzzDecideHeaders(f *testing.F) {
	f.Add("203.0.113.7", "51000", "POST", "/login?x=1", "a=1; session=spammer", "10.0.0.1, 203.0.113.7")
	f.Add("::ffff:1.2.3.4", "x", "", "", ";;=;", "")
	f.Add("2001:db8::1%eth0", "99999", "GET", "?", "session", "junk")
	h, _ := setup(f)
	f.Fuzz(func(t *testing.T, ip, port, method, uri, cookie, xff string) {
		r := &http1.Request{Method: "GET", Target: "/v1/decide", Minor: 1, Headers: []http1.Header{
			{Name: "x-real-ip", Value: ip}, {Name: "x-real-port", Value: port}, {Name: "x-original-method", Value: method},
			{Name: "x-original-uri", Value: uri}, {Name: "cookie", Value: cookie}, {Name: "x-forwarded-for", Value: xff}}}
		s := h.pool.Get().(*scratch)
		d, _ := h.Decide(r, s, now)
		h.pool.Put(s)
		if !d.Allow {
			p, err := parseDecision(encode(d))
			if err != nil || p.action != d.Action {
				t.Fatalf("decision %q does not round-trip: %v", encode(d), err)
			}
		}
	})
}

// The whole answer, allow and deny, with and without X-Real-Port, under the
// built-in rules, allocates nothing.
func TestServeHTTP1Allocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	h, _ := setup(t)
	set, err := rules.Builtin(rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h.SetRules(set)
	for _, tt := range []struct{ ip, port string }{{"172.16.3.4", ""}, {"172.16.3.4", "51000"}, {"198.51.100.9", ""}, {"198.51.100.9", "x"}} {
		r := &http1.Request{Received: time.Now(), Method: "GET", Target: "/v1/decide", Host: "guardd", Minor: 1, Headers: []http1.Header{
			{Name: "host", Value: "guardd"}, {Name: "x-real-ip", Value: tt.ip}, {Name: "x-real-port", Value: tt.port},
			{Name: "x-original-method", Value: "GET"}, {Name: "x-original-uri", Value: "/product/17"},
			{Name: "user-agent", Value: "Mozilla/5.0"}, {Name: "cookie", Value: "session=s17"}}}
		var w http1.Response
		h.ServeHTTP1(&w, r)
		if n := testing.AllocsPerRun(200, func() { h.ServeHTTP1(&w, r) }); n != 0 {
			t.Errorf("%s port %q (status %d): %v allocs", tt.ip, tt.port, w.Status(), n)
		}
	}
}

func TestParsePort(t *testing.T) {
	for in, want := range map[string]uint16{"51000": 51000, "0": 0, "65535": 65535, "65536": 0, "": 0, "-1": 0, "1x": 0, "123456": 0} {
		if got := parsePort(in); got != want {
			t.Errorf("parsePort(%q) = %d, want %d", in, got, want)
		}
	}
}

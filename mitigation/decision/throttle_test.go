package decision

import (
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/decision/http1"
	"github.com/guardd/guardd/rules"
)

const apiThrottle = `# METADATA
# title: API per client
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 3
#   action: throttle
#   algorithm: gcra
package guardd.rules.api

count if startswith(input.http.path, "/api/")
`

// clock is the handler's clock, set by the test while the server reads it.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time  { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) set(t time.Time) { c.ns.Store(t.UnixNano()) }

// throttleHandler's clock starts at now; tests that call Decide themselves
// pass their own time.
func throttleHandler(t testing.TB, c *clock) *Handler {
	t.Helper()
	set, err := rules.Load(fstest.MapFS{"api.rego": {Data: []byte(apiThrottle)}, "login.rego": {Data: []byte(loginRule)}}, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := mitigation.New(mitigation.Config{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	store.Add(mitigation.Mitigation{Rule: "manual", Action: mitigation.ActionBlock, Origin: "api",
		Scope: mitigation.Scope{{Name: "ip.src", Value: "198.51.100.1"}}, Expires: now.Add(time.Hour)}, now)
	c.set(now)
	h, err := New(Config{Store: store, Rules: set, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestThrottle: allowed answers carry RateLimit with a falling remaining
// and RateLimit-Policy; the request over the limit gets 401 with a throttle
// decision, which /v1/respond renders as 429 with the exact Retry-After; a
// block outranks a throttle.
func TestThrottle(t *testing.T) {
	var c clock
	h := throttleHandler(t, &c)
	url := serve(t, h)
	for i, want := range []string{`"api";r=2;t=20`, `"api";r=1;t=40`, `"api";r=0;t=60`} {
		resp, _ := get(t, "GET", url+"/v1/decide", decideHeaders("192.0.2.1", "GET", "/api/items", ""))
		if resp.StatusCode != http.StatusNoContent || resp.Header.Get("RateLimit") != want || resp.Header.Get("RateLimit-Policy") != `"api";q=3;w=60` {
			t.Fatalf("request %d: %d RateLimit=%q Policy=%q, want 204 %q", i+1, resp.StatusCode, resp.Header.Get("RateLimit"), resp.Header.Get("RateLimit-Policy"), want)
		}
	}
	resp, _ := get(t, "GET", url+"/v1/decide", decideHeaders("192.0.2.1", "GET", "/api/items", ""))
	dec := resp.Header.Get(HeaderDecision)
	if resp.StatusCode != http.StatusUnauthorized || dec != "throttle;retry=20;rule=api;q=3;w=60" {
		t.Fatalf("over the limit: %d %q", resp.StatusCode, dec)
	}
	hd := http.Header{}
	hd.Set(HeaderDecision, dec)
	resp, _ = get(t, "GET", url+"/v1/respond", hd)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "20" ||
		resp.Header.Get("RateLimit") != `"api";r=0;t=20` || resp.Header.Get("RateLimit-Policy") != `"api";q=3;w=60` {
		t.Fatalf("respond: %d %v", resp.StatusCode, resp.Header)
	}
	// Another client, another path: unaffected, no headers off the API.
	if resp, _ := get(t, "GET", url+"/v1/decide", decideHeaders("192.0.2.2", "GET", "/api/items", "")); resp.StatusCode != 204 || resp.Header.Get("RateLimit") != `"api";r=2;t=20` {
		t.Errorf("another client: %d %v", resp.StatusCode, resp.Header)
	}
	if resp, _ := get(t, "GET", url+"/v1/decide", decideHeaders("192.0.2.1", "GET", "/", "")); resp.StatusCode != 204 || resp.Header.Get("RateLimit") != "" {
		t.Errorf("another path: %d %v", resp.StatusCode, resp.Header)
	}
	// 20 seconds on (the clock the handler reads), the next is admitted.
	at := now.Add(20 * time.Second)
	c.set(at)
	if resp, _ := get(t, "GET", url+"/v1/decide", decideHeaders("192.0.2.1", "GET", "/api/items", "")); resp.StatusCode != 204 {
		t.Errorf("after Retry-After: %d", resp.StatusCode)
	}
	// A blocked client over its throttle gets the block.
	var w http1.Response
	for range 5 {
		w = http1.Response{}
		h.ServeHTTP1(&w, decideReq("198.51.100.1", "GET", "/api/x", ""))
	}
	d, err := h.Decide(decideReq("198.51.100.1", "GET", "/api/x", ""), h.pool.Get().(*scratch), at)
	if err != nil || d.Action != mitigation.ActionBlock {
		t.Errorf("blocked and throttled: %v %v", d.Action, err)
	}
}

func TestThrottleAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	var c clock
	h := throttleHandler(t, &c)
	at := now
	s := h.pool.Get().(*scratch)
	r1 := decideReq("192.0.2.1", "GET", "/api/items", "")
	h.Decide(r1, s, at)
	// Allowed and refused (three a minute, one a second).
	if n := testing.AllocsPerRun(200, func() {
		d, _ := h.Decide(r1, s, at)
		s.hdr = d.Throttle.AppendRateLimit(s.hdr[:0])
		s.hdr = d.Throttle.AppendPolicy(s.hdr[:0])
		s.buf = appendEncoded(s.buf[:0], d)
		at = at.Add(time.Second)
	}); n != 0 {
		t.Errorf("throttled decide allocates %v times", n)
	}
}

// BenchmarkThrottleDecide: Decide with two throttle rules on ip.src beside
// the built-in rules, over 1,000,000 distinct client addresses already in
// the counters (each seen once before, a few times in the run), one in ten
// requests from 100 hot addresses, which are refused.
func BenchmarkThrottleDecide(b *testing.B) {
	var c clock
	h := throttleHandler(b, &c)
	at := now
	builtin, err := rules.Builtin(rules.Options{})
	if err != nil {
		b.Fatal(err)
	}
	// 3 a minute for the API (gcra), and 100 a minute (sliding window).
	perMinute := strings.Replace(apiThrottle, "package guardd.rules.api", "package guardd.rules.api_minute", 1)
	perMinute = strings.Replace(perMinute, "algorithm: gcra", "algorithm: sliding_window", 1)
	perMinute = strings.Replace(perMinute, "requests_per_period: 3", "requests_per_period: 100", 1)
	extra, err := rules.Load(fstest.MapFS{"api.rego": {Data: []byte(apiThrottle)}, "minute.rego": {Data: []byte(perMinute)}}, rules.Options{})
	if err != nil {
		b.Fatal(err)
	}
	all, err := rules.Merge(builtin, extra)
	if err != nil {
		b.Fatal(err)
	}
	if err := h.SetRules(all); err != nil {
		b.Fatal(err)
	}
	keys := benchKeys
	reqs := make([]*http1.Request, 0, 1024)
	for i := range 1024 {
		reqs = append(reqs, decideReq(fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255), "GET", "/api/items?page=2", "session=abc"))
	}
	s := h.pool.Get().(*scratch)
	ip := func(r *http1.Request, i int) {
		for j := range r.Headers {
			if r.Headers[j].Name == hClientIP {
				if i%10 == 0 {
					r.Headers[j].Value = hot[(i/10)%len(hot)]
				} else {
					r.Headers[j].Value = addrs[i%keys]
				}
			}
		}
	}
	if addrs == nil {
		addrs = make([]string, 1_000_000)
		for i := range addrs {
			addrs[i] = fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255)
		}
		for i := range hot {
			hot[i] = fmt.Sprintf("172.16.0.%d", i)
		}
	}
	for i := range keys { // every address in the counters
		r := reqs[i%len(reqs)]
		for j := range r.Headers {
			if r.Headers[j].Name == hClientIP {
				r.Headers[j].Value = addrs[i]
			}
		}
		h.Decide(r, s, at)
	}
	refused := 0
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r := reqs[i%len(reqs)]
		ip(r, i)
		d, _ := h.Decide(r, s, at)
		if d.Action == mitigation.ActionThrottle {
			refused++
		}
		i++
	}
	b.ReportMetric(float64(refused)/float64(i), "refused/op")
}

var (
	addrs []string
	hot   [100]string
)

var benchKeys = 1_000_000

// FuzzThrottleDecide: attacker-chosen request fields through throttle rules
// (a rate, a concurrency limit keyed on a header): no panic, a refusal
// round-trips through X-Guardd-Decision, and the RateLimit values the
// allowed answer carries hold no byte that could break a header.
func FuzzThrottleDecide(f *testing.F) {
	f.Add("192.0.2.1", "/api/items", "req-1", "k1")
	f.Add("2001:db8::1", "/api/../x?\r\n", "", "\x00")
	f.Add("::ffff:1.2.3.4", "/api/", "id\nX-Evil: 1", "key;\"q")
	var c clock
	h := throttleHandler(f, &c)
	at := now
	conc := strings.NewReplacer("package guardd.rules.api", "package guardd.rules.api_conc",
		"#   period: 1m\n#   requests_per_period: 3\n", "", "#   algorithm: gcra\n", "#   concurrency: 1\n",
		"characteristics: [ip.src]", "characteristics: [http.headers.x-api-key]").Replace(apiThrottle)
	set, err := rules.Load(fstest.MapFS{"api.rego": {Data: []byte(apiThrottle)}, "conc.rego": {Data: []byte(conc)}}, rules.Options{})
	if err != nil {
		f.Fatal(err)
	}
	if err := h.SetRules(set); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, ip, uri, id, key string) {
		r := decideReq(ip, "GET", uri, "")
		r.Headers = append(r.Headers, http1.Header{Name: "x-request-id", Value: id}, http1.Header{Name: "x-api-key", Value: key})
		s := h.pool.Get().(*scratch)
		defer h.pool.Put(s)
		for range 3 {
			d, _ := h.Decide(r, s, at)
			if !d.Allow {
				p, err := parseDecision(encode(d))
				if err != nil || p.action != d.Action || p.shed != d.Shed {
					t.Fatalf("decision %q does not round-trip: %v", encode(d), err)
				}
				continue
			}
			if d.Throttle.Matched {
				for _, v := range [][]byte{d.Throttle.AppendRateLimit(nil), d.Throttle.AppendPolicy(nil)} {
					if strings.ContainsAny(string(v), "\r\n\x00") {
						t.Fatalf("header value %q", v)
					}
				}
			}
		}
	})
}

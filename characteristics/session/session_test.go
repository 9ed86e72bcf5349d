package session

import (
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"github.com/guardd/guardd/characteristics"
)

const chrome = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

var t0 = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)

// req is one request of a test: what a log line says.
type req struct {
	ip, method, path, proto, referer, cookie string
	ua                                       string
	at                                       time.Duration
	xhr                                      bool
}

func (r req) event() *characteristics.Event {
	e := &characteristics.Event{IP: netip.MustParseAddr(r.ip), Method: r.method, Path: r.path, Protocol: r.proto, Referer: r.referer,
		UserAgent: r.ua, Time: t0.Add(r.at)}
	if e.UserAgent == "" {
		e.UserAgent = chrome
	}
	if e.Protocol == "" {
		e.Protocol = "HTTP/1.1"
	}
	if r.cookie != "" {
		e.Cookies = []characteristics.Field{{Name: "session", Value: r.cookie}}
	}
	if r.xhr {
		e.SetHeader("X-Requested-With", "XMLHttpRequest")
	}
	return e
}

func TestKind(t *testing.T) {
	for _, c := range []struct {
		path string
		want pathKind
	}{
		{"/", kindPage}, {"/product/9", kindPage}, {"/blog/post-1.html", kindPage}, {"/index.PHP", kindPage}, {"/a.b/c", kindPage},
		{"/static/app.js", kindAsset}, {"/static/APP.CSS", kindAsset}, {"/favicon.ico", kindAsset}, {"/fonts/inter.woff2", kindAsset},
		{"/api/products", kindOther}, {"/API/v1/x", kindOther}, {"/loki/api/v1/query_range", kindOther}, {"/graphql", kindOther},
		{"/feed.xml", kindOther}, {"/feed", kindOther}, {"/.well-known/acme-challenge/x", kindOther}, {"/data/1.sql", kindOther},
		{"/wp-json/wp/v2/posts", kindOther}, {"/__nextjs", kindOther}, {"/download.verylongextension", kindOther}, {"", kindPage},
	} {
		if got := kind(c.path); got != c.want {
			t.Errorf("kind(%q) = %d, want %d", c.path, got, c.want)
		}
	}
}

func TestObserve(t *testing.T) {
	const a, b = "198.51.100.7", "2001:db8::7"
	type want struct {
		reqs, pages, bare, postNoGet uint32
		flags                        characteristics.SessionFlags
	}
	never := characteristics.SessionRefererNever | characteristics.SessionCookieNever
	for _, c := range []struct {
		name    string
		reqs    []req
		cookies bool // the source carries cookies
		want    want // the session of the last request
	}{
		{"browser: page, assets, cookie, referer", []req{
			{ip: a, method: "GET", path: "/"},
			{ip: a, method: "GET", path: "/static/app.js", cookie: "s1", referer: "https://shop.example/", at: time.Second},
			{ip: a, method: "GET", path: "/product/1", cookie: "s1", referer: "https://shop.example/", at: 9 * time.Second},
		}, true, want{reqs: 3, pages: 2, bare: 0}},
		{"HTML only, distinct pages counted", []req{
			{ip: a, method: "GET", path: "/product/1", referer: "https://shop.example/"},
			{ip: a, method: "GET", path: "/product/2", referer: "https://shop.example/", at: time.Second},
			{ip: a, method: "GET", path: "/product/2", referer: "https://shop.example/", at: 2 * time.Second},
			{ip: a, method: "GET", path: "/product/3", referer: "https://shop.example/", at: 3 * time.Second},
		}, true, want{reqs: 4, pages: 4, bare: 3, flags: characteristics.SessionCookieNever}},
		{"without cookies in the source, never is not said", []req{
			{ip: a, method: "GET", path: "/product/1", referer: "https://shop.example/"},
			{ip: a, method: "GET", path: "/product/2", referer: "https://shop.example/", at: time.Second},
		}, false, want{reqs: 2, pages: 2, bare: 2}},
		{"XHR and API calls are not pages", []req{
			{ip: a, method: "GET", path: "/cart", xhr: true},
			{ip: a, method: "GET", path: "/api/cart", at: time.Second},
		}, true, want{reqs: 2, flags: never}},
		{"POST before any GET", []req{
			{ip: a, method: "POST", path: "/contact", referer: "https://shop.example/contact"},
			{ip: a, method: "POST", path: "/contact", referer: "https://shop.example/contact", at: time.Minute},
		}, true, want{reqs: 2, postNoGet: 2, flags: characteristics.SessionCookieNever}},
		{"POST after the form", []req{
			{ip: a, method: "GET", path: "/contact"},
			{ip: a, method: "POST", path: "/contact", at: time.Minute},
		}, true, want{reqs: 2, pages: 1, bare: 1, flags: never}},
		{"HTTP/1.0 then HTTP/1.1", []req{
			{ip: a, method: "GET", path: "/newsletter", proto: "HTTP/1.0"},
			{ip: a, method: "POST", path: "/newsletter/subscribe", at: time.Second},
		}, true, want{reqs: 2, pages: 1, bare: 1, flags: never | characteristics.SessionProtoChanged}},
		{"HTTP/2 then HTTP/3 is no change", []req{
			{ip: a, method: "GET", path: "/", proto: "HTTP/2.0"},
			{ip: a, method: "GET", path: "/about", proto: "HTTP/3.0", at: time.Second},
		}, false, want{reqs: 2, pages: 2, bare: 2, flags: characteristics.SessionRefererNever}},
		{"one address is one session, whatever its user agents (a NAT)", []req{
			{ip: a, method: "GET", path: "/static/app.js", cookie: "s1", referer: "https://shop.example/"},
			{ip: a, method: "GET", path: "/product/1", ua: "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", at: time.Second},
		}, true, want{reqs: 2, pages: 1}},
		{"another address is another session", []req{
			{ip: a, method: "GET", path: "/product/1"},
			{ip: b, method: "GET", path: "/product/2", at: time.Second},
		}, true, want{reqs: 1, pages: 1, bare: 1, flags: never}},
		{"idle ends a session", []req{
			{ip: a, method: "GET", path: "/static/app.js", cookie: "s1", referer: "https://shop.example/"},
			{ip: a, method: "POST", path: "/contact", at: DefaultIdle + time.Second},
		}, true, want{reqs: 1, postNoGet: 1, flags: never}},
		{"a line older than the session's newest keeps it", []req{
			{ip: a, method: "GET", path: "/product/1", at: time.Minute},
			{ip: a, method: "GET", path: "/product/2"},
		}, true, want{reqs: 2, pages: 2, bare: 2, flags: never}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tbl := New(Config{})
			var got characteristics.Session
			for _, r := range c.reqs {
				got = tbl.Observe(Of(r.event(), c.cookies))
			}
			w := characteristics.Session{Known: true, Requests: c.want.reqs, Pages: c.want.pages, PagesWithoutAssets: c.want.bare,
				PostsWithoutGet: c.want.postNoGet, Flags: c.want.flags}
			if got != w {
				t.Errorf("session %+v, want %+v", got, w)
			}
		})
	}
}

// TestBounded: a flood of distinct clients keeps the table at its size,
// evicting the least recently seen, and a client seen again in time keeps
// its session.
func TestBounded(t *testing.T) {
	tbl := New(Config{Slots: 256})
	if tbl.Slots() != 256 {
		t.Fatalf("%d slots, want 256", tbl.Slots())
	}
	keep := req{ip: "198.51.100.1", method: "GET", path: "/product/1"}
	for i := range 100_000 {
		var a [4]byte
		a[0], a[1], a[2], a[3] = 10, byte(i>>16), byte(i>>8), byte(i)
		e := keep.event()
		e.IP, e.Time = netip.AddrFrom4(a), t0.Add(time.Duration(i)*time.Millisecond)
		tbl.Observe(Of(e, true))
		if i%8 == 0 { // the kept client stays recent in its set
			k := keep.event()
			k.Time = e.Time
			tbl.Observe(Of(k, true))
		}
	}
	if tbl.Evictions() < 90_000 {
		t.Errorf("%d evictions for 100,000 clients in 256 slots", tbl.Evictions())
	}
	k := keep.event()
	k.Time = t0.Add(100 * time.Second)
	if s := tbl.Observe(Of(k, true)); s.Requests < 1000 {
		t.Errorf("the client seen all along has %d requests: its session was evicted", s.Requests)
	}
}

func TestSlotSize(t *testing.T) {
	if n := unsafe.Sizeof(slot{}); n != 40 {
		t.Errorf("slot is %d bytes, want 40 (the package doc says so)", n)
	}
}

func TestAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	tbl := New(Config{})
	e := req{ip: "198.51.100.7", method: "GET", path: "/product/1", referer: "https://shop.example/"}.event()
	if n := testing.AllocsPerRun(1000, func() {
		e.Time = e.Time.Add(time.Second)
		tbl.Observe(Of(e, true))
	}); n != 0 {
		t.Errorf("%v allocations per request, want 0", n)
	}
}

func BenchmarkObserve(b *testing.B) {
	tbl := New(Config{})
	evs := make([]*characteristics.Event, 4096)
	for i := range evs {
		evs[i] = req{ip: netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}).String(), method: "GET", path: "/product/1"}.event()
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		e := evs[i&4095]
		e.Time = e.Time.Add(time.Millisecond)
		tbl.Observe(Of(e, true))
		i++
	}
}

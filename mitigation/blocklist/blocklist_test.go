package blocklist

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/guardd/guardd/mitigation"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// fakeStore serves a fixed list, as a store with unchecked values would,
// so formatting sees forms a real store canonicalises away.
type fakeStore struct {
	ms     []mitigation.Mitigation
	cursor uint64
}

func (f *fakeStore) Snapshot(now time.Time) ([]mitigation.Mitigation, uint64) {
	var out []mitigation.Mitigation
	for _, m := range f.ms {
		if m.Expires.After(now) {
			out = append(out, m)
		}
	}
	return out, f.cursor
}

func (f *fakeStore) Changes(since uint64) (_, _ []mitigation.Mitigation, _ uint64, _ bool) {
	return nil, nil, f.cursor, since <= f.cursor
}

func m(a mitigation.Action, name, value string, ttl time.Duration) mitigation.Mitigation {
	return mitigation.Mitigation{Rule: "r", Action: a, Scope: mitigation.Scope{{Name: name, Value: value}}, Expires: t0.Add(ttl)}
}

func TestPrefixes(t *testing.T) {
	B, F, R, L := mitigation.ActionBlock, mitigation.ActionFirewall, mitigation.ActionRateLimit, mitigation.ActionLog
	for _, tc := range []struct {
		name    string
		actions []string
		ms      []mitigation.Mitigation
		want    string
	}{
		{"empty", nil, nil, ""},
		{"v4 sorted numerically", nil, []mitigation.Mitigation{m(B, "ip.src", "10.0.0.10", time.Hour), m(B, "ip.src", "10.0.0.9", time.Hour), m(F, "ip.src", "9.255.255.255", time.Hour)},
			"9.255.255.255 10.0.0.9 10.0.0.10"},
		{"v6 after v4, compressed", nil, []mitigation.Mitigation{m(B, "ip.src", "2001:0db8:0:0::1", time.Hour), m(B, "ip.src", "192.0.2.1", time.Hour)},
			"192.0.2.1 2001:db8::1"},
		{"mapped is v4", nil, []mitigation.Mitigation{m(B, "ip.src", "::ffff:192.0.2.1", time.Hour), m(B, "ip.src.prefix", "::ffff:198.51.100.0/120", time.Hour)},
			"192.0.2.1 198.51.100.0/24"},
		{"prefix masked", nil, []mitigation.Mitigation{m(B, "ip.src.prefix", "198.51.100.77/24", time.Hour), m(B, "ip.src.prefix", "2001:db8:1:2::5/64", time.Hour)},
			"198.51.100.0/24 2001:db8:1:2::/64"},
		{"host prefix written bare", nil, []mitigation.Mitigation{m(B, "ip.src.prefix", "192.0.2.9/32", time.Hour)}, "192.0.2.9"},
		{"dedup", nil, []mitigation.Mitigation{m(B, "ip.src", "192.0.2.1", time.Hour), m(F, "ip.src", "192.0.2.1", time.Hour), m(B, "ip.src.prefix", "192.0.2.1/32", time.Hour)},
			"192.0.2.1"},
		{"inside a listed network", nil, []mitigation.Mitigation{
			m(B, "ip.src", "198.51.100.7", time.Hour), m(B, "ip.src.prefix", "198.51.100.0/24", time.Hour),
			m(B, "ip.src.prefix", "198.51.100.128/25", time.Hour), m(B, "ip.src", "198.51.101.1", time.Hour),
			m(B, "ip.src.prefix", "198.0.0.0/8", time.Hour)},
			"198.0.0.0/8"},
		{"v4 network does not hold v6", nil, []mitigation.Mitigation{m(B, "ip.src.prefix", "0.0.0.0/0", time.Hour), m(B, "ip.src", "::1", time.Hour)},
			"0.0.0.0/0 ::1"},
		{"expired left out", nil, []mitigation.Mitigation{m(B, "ip.src", "192.0.2.1", -time.Second), m(B, "ip.src", "192.0.2.2", time.Hour)}, "192.0.2.2"},
		{"default actions", nil, []mitigation.Mitigation{m(R, "ip.src", "192.0.2.1", time.Hour), m(L, "ip.src", "192.0.2.2", time.Hour), m(F, "ip.src", "192.0.2.3", time.Hour)}, "192.0.2.3"},
		{"chosen actions", []string{"rate_limit"}, []mitigation.Mitigation{m(R, "ip.src", "192.0.2.1", time.Hour), m(B, "ip.src", "192.0.2.2", time.Hour)}, "192.0.2.1"},
		{"other scopes left out", nil, []mitigation.Mitigation{m(B, "tls.ja4", "t13d", time.Hour),
			{Action: B, Scope: mitigation.Scope{{Name: "ip.src", Value: "192.0.2.1"}, {Name: "http.path", Value: "/login"}}, Expires: t0.Add(time.Hour)},
			m(B, "ip.src", "not-an-ip", time.Hour)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acts, err := parseActions(tc.actions)
			if err != nil {
				t.Fatal(err)
			}
			ms, _ := (&fakeStore{ms: tc.ms}).Snapshot(t0)
			var got []string
			for _, p := range prefixes(ms, acts) {
				got = append(got, string(appendPrefix(nil, p)))
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("got %q, want %q", g, tc.want)
			}
		})
	}
}

func get(t *testing.T, h http.Handler, path string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestHandler(t *testing.T) {
	now := t0
	st, err := mitigation.New(mitigation.Config{Now: func() time.Time { return now }}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	add := func(name, value string, ttl time.Duration) mitigation.Mitigation {
		got, _, err := st.Add(m(mitigation.ActionBlock, name, value, ttl), now)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	add("ip.src", "203.0.113.7", time.Hour)
	add("ip.src.prefix", "2001:db8::/48", time.Hour)
	short := add("ip.src", "192.0.2.1", time.Minute)
	h, err := NewHandler(Config{Now: func() time.Time { return now }}, st, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, body string }{
		{"/blocklist/ipv4.txt", "192.0.2.1\n203.0.113.7\n"},
		{"/blocklist/ipv6.txt", "2001:db8::/48\n"},
		{"/any/mount/all.txt", "192.0.2.1\n203.0.113.7\n2001:db8::/48\n"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			w := get(t, h, tc.path)
			if w.Code != 200 || w.Body.String() != tc.body {
				t.Fatalf("%d %q, want %q", w.Code, w.Body.String(), tc.body)
			}
			if ct := w.Header().Get("Content-Type"); ct != "text/plain; charset=utf-8" {
				t.Errorf("content type %q", ct)
			}
			etag := w.Header().Get("ETag")
			if !strings.HasPrefix(etag, `"`) || strings.HasPrefix(etag, "W/") || len(etag) != 34 {
				t.Errorf("etag %q: want strong, quoted", etag)
			}
			if lm := w.Header().Get("Last-Modified"); lm != now.Format(http.TimeFormat) {
				t.Errorf("Last-Modified %q", lm)
			}
			for _, cond := range [][]string{{"If-None-Match", etag}, {"If-None-Match", `"x", ` + etag}, {"If-None-Match", "W/" + etag}, {"If-None-Match", "*"},
				{"If-Modified-Since", now.Format(http.TimeFormat)}} {
				if w := get(t, h, tc.path, cond...); w.Code != 304 || w.Body.Len() != 0 {
					t.Errorf("%v: %d, want 304", cond, w.Code)
				}
			}
			if w := get(t, h, tc.path, "If-None-Match", `"other"`); w.Code != 200 {
				t.Errorf("other etag: %d, want 200", w.Code)
			}
		})
	}
	v6Tag := get(t, h, "/b/ipv6.txt").Header().Get("ETag")
	tag := get(t, h, "/b/ipv4.txt").Header().Get("ETag")

	// Expiry moves the feed: the v4 list changes, with a new ETag and
	// Last-Modified; the v6 list keeps both.
	now = now.Add(2 * time.Minute)
	st.Expire(now)
	w := get(t, h, "/b/ipv4.txt", "If-None-Match", tag)
	if w.Code != 200 || w.Body.String() != "203.0.113.7\n" || w.Header().Get("ETag") == tag {
		t.Errorf("after expiry of %v: %d %q %s", short.Scope, w.Code, w.Body.String(), w.Header().Get("ETag"))
	}
	if lm := w.Header().Get("Last-Modified"); lm != now.Format(http.TimeFormat) {
		t.Errorf("Last-Modified after change %q", lm)
	}
	if w := get(t, h, "/b/ipv6.txt", "If-None-Match", v6Tag); w.Code != 304 {
		t.Errorf("unchanged v6 feed: %d, want 304", w.Code)
	}
	if w := get(t, h, "/b/nope.txt"); w.Code != 404 {
		t.Errorf("unknown feed %d", w.Code)
	}
	r := httptest.NewRequest("POST", "/b/all.txt", nil)
	rw := httptest.NewRecorder()
	h.ServeHTTP(rw, r)
	if rw.Code != 405 {
		t.Errorf("POST: %d", rw.Code)
	}
}

func TestGeoRender(t *testing.T) {
	st := &fakeStore{ms: []mitigation.Mitigation{
		m(mitigation.ActionBlock, "ip.src", "203.0.113.7", time.Hour),
		m(mitigation.ActionBlock, "ip.src.prefix", "198.51.100.0/24", time.Hour),
		m(mitigation.ActionFirewall, "ip.src", "2001:db8::7", time.Hour),
	}}
	for _, format := range []string{"include", "geo"} {
		t.Run(format, func(t *testing.T) {
			g, err := NewGeo(GeoConfig{Path: filepath.Join(t.TempDir(), "g.conf"), Format: format}, st, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			ms, _ := st.Snapshot(t0)
			got := g.render(prefixes(ms, g.acts))
			golden := filepath.Join("testdata", format+".golden")
			if *update {
				os.WriteFile(golden, got, 0o644)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestGeoConfig(t *testing.T) {
	st := &fakeStore{}
	for _, tc := range []struct {
		name string
		cfg  GeoConfig
		want string
	}{
		{"no path", GeoConfig{}, "path"},
		{"format", GeoConfig{Path: "p", Format: "map"}, "'include' or 'geo'"},
		{"variable", GeoConfig{Path: "p", Variable: "$x"}, "variable"},
		{"action", GeoConfig{Path: "p", Actions: []string{"drop"}}, "unknown action"},
		{"negative", GeoConfig{Path: "p", ReloadInterval: -1}, "want 0"},
		{"empty command", GeoConfig{Path: "p", ReloadCommand: []string{""}}, "reload_command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewGeo(tc.cfg, st, nil, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestDebouncer(t *testing.T) {
	d := debouncer{interval: 10 * time.Second}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	steps := []struct {
		sec     int
		request bool
		want    bool
	}{
		{0, false, false}, // nothing pending
		{1, true, true},   // first run at once
		{2, true, false},  // within the interval: held
		{5, true, false},  // coalesced with the one before
		{10, false, false},
		{11, false, true}, // interval over: the pending run happens
		{12, false, false},
		{30, true, true}, // long after: at once
	}
	for _, s := range steps {
		if s.request {
			d.pending = true
		}
		if got := d.due(at(s.sec)); got != s.want {
			t.Errorf("t=%ds: due = %v, want %v", s.sec, got, s.want)
		}
	}
}

// TestAtomicWrite rewrites a file between a long and a short content while
// readers read it: every read is one of the two, whole.
func TestAtomicWrite(t *testing.T) {
	p := filepath.Join(t.TempDir(), "geo.conf")
	long := bytes.Repeat([]byte("203.0.113.77 1;\n"), 8000)
	short := []byte("192.0.2.1 1;\n")
	if err := writeFileAtomic(p, short, 0o644); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var reads atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Errorf("read: %v", err)
					return
				}
				if !bytes.Equal(b, long) && !bytes.Equal(b, short) {
					t.Errorf("read a partial file of %d bytes", len(b))
					return
				}
				reads.Add(1)
			}
		}()
	}
	for i := range 60 {
		c := short
		if i%2 == 0 {
			c = long
		}
		if err := writeFileAtomic(p, c, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if reads.Load() == 0 {
		t.Error("no read happened")
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", fi.Mode())
	}
	if ents, _ := os.ReadDir(filepath.Dir(p)); len(ents) != 1 {
		t.Errorf("temp files left: %v", ents)
	}
}

// TestGeoRunReloads drives Run with a real store and a reload script that
// appends a line per run (how many entries the file held): changes within
// ReloadInterval share one reload, the last change is followed by one, and
// no change runs none. It runs in a synctest bubble: Run's ticker and clock
// are the bubble's, so the burst, the interval and the quiet spell after it
// are exact and cost no wall-clock time, and synctest.Wait returns once Run
// is waiting for its next tick (the reload command included).
func TestGeoRunReloads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		runs := filepath.Join(dir, "runs")
		path := filepath.Join(dir, "blocked.conf")
		script := filepath.Join(dir, "reload.sh")
		os.WriteFile(script, []byte("#!/bin/sh\nn=$(grep -c ' 1;' "+path+")\necho \"$n\" >> "+runs+"\n"), 0o755)
		st, err := mitigation.New(mitigation.Config{}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		const interval = 400 * time.Millisecond
		g, err := NewGeo(GeoConfig{Path: path, ReloadCommand: []string{script}, ReloadInterval: interval, PollInterval: 10 * time.Millisecond}, st, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- g.Run(ctx) }()
		// reloads returns, per reload so far, the entries the file held.
		reloads := func() []string {
			b, _ := os.ReadFile(runs)
			return strings.Fields(string(b))
		}
		// The first write (empty list) reloads at once.
		synctest.Wait()
		if r := reloads(); len(r) != 1 || r[0] != "0" {
			t.Fatalf("reloads after the first write: %q, want one of an empty list", r)
		}
		start := time.Now()
		for i := range 20 {
			now := time.Now()
			st.Add(mitigation.Mitigation{Rule: "r", Action: mitigation.ActionBlock, Scope: mitigation.Scope{{Name: "ip.src", Value: fmt.Sprintf("192.0.2.%d", i+1)}}, Expires: now.Add(time.Hour)}, now)
			time.Sleep(25 * time.Millisecond) // the bubble's clock: the burst's pace under test
		}
		burst := time.Since(start)
		// The burst's last change is followed by a reload within an interval.
		time.Sleep(interval) // the bubble's clock: one interval passes
		synctest.Wait()
		if b, _ := os.ReadFile(path); !bytes.Contains(b, []byte("192.0.2.20 1;")) {
			t.Fatalf("the file does not hold the last change:\n%s", b)
		}
		r := reloads()
		if last := r[len(r)-1]; last != "20" {
			t.Errorf("the last reload saw %s entries, want 20 (the last change was not followed by a reload): %q", last, r)
		}
		if maxRuns := 1 + int(burst/interval) + 2; len(r) > maxRuns {
			t.Errorf("%d reloads for a %v burst with interval %v: want at most %d", len(r), burst, interval, maxRuns)
		}
		if len(r) < 2 {
			t.Errorf("%d reloads: the burst was never reloaded", len(r))
		}
		// Nothing changes: no more reloads.
		time.Sleep(3 * interval) // the bubble's clock: a quiet spell
		synctest.Wait()
		if again := reloads(); len(again) != len(r) {
			t.Errorf("reloads without change: %q then %q", r, again)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// TestGeoNginx checks that nginx accepts both formats, when nginx is
// installed.
func TestGeoNginx(t *testing.T) {
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		t.Skip("nginx not installed")
	}
	st := &fakeStore{ms: []mitigation.Mitigation{
		m(mitigation.ActionBlock, "ip.src", "203.0.113.7", time.Hour),
		m(mitigation.ActionBlock, "ip.src.prefix", "198.51.100.0/24", time.Hour),
		m(mitigation.ActionBlock, "ip.src", "2001:db8::7", time.Hour),
		m(mitigation.ActionBlock, "ip.src.prefix", "2001:db8:1::/48", time.Hour),
	}}
	for _, tc := range []struct{ format, http string }{
		{"include", "geo $guardd_blocked { default 0; include %s; }"},
		{"geo", "include %s;"},
	} {
		t.Run(tc.format, func(t *testing.T) {
			dir := t.TempDir()
			geo := filepath.Join(dir, "blocked.conf")
			g, err := NewGeo(GeoConfig{Path: geo, Format: tc.format, Now: func() time.Time { return t0 }}, st, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			g.step(context.Background(), t0)
			conf := filepath.Join(dir, "nginx.conf")
			os.WriteFile(conf, []byte(fmt.Sprintf(`pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events {}
http {
    access_log off;
    `+tc.http+`
    server {
        listen 127.0.0.1:1;
        if ($guardd_blocked) { return 403; }
    }
}
`, dir, geo)), 0o644)
			out, err := exec.Command(nginx, "-t", "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", conf).CombinedOutput()
			if err != nil {
				t.Fatalf("nginx -t: %v\n%s\ngeo file:\n%s", err, out, g.content)
			}
		})
	}
}

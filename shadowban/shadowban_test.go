package shadowban

import (
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestMatchAndWrite(t *testing.T) {
	r, err := New(Config{Routes: []Route{
		{Method: "post", Path: "/api/invite", Body: `{"ok":true,"invite_id":"${id}"}`},
		{Path: "/api/comments/*", Status: 201, Body: `{"id":"${uuid}","created":"${now}"}`},
		{Path: "/search", ContentType: "text/html", Body: "<html><body>No results</body></html>", Headers: map[string]string{"X-Cache": "HIT"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		method, path string
		status       int
		body         string // regexp
		ctype        string
	}{
		{"POST", "/api/invite", 200, `^\{"ok":true,"invite_id":"[0-9a-f]{16}"\}$`, "application/json"},
		{"POST", "/api/invite?x=1", 200, `"ok":true`, "application/json"},
		{"GET", "/api/invite", 200, `^\{\}$`, "application/json"}, // method mismatch: default
		{"PUT", "/api/comments/7", 201, `^\{"id":"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}","created":"2026-11-01T10:00:00Z"\}$`, "application/json"},
		{"GET", "/search", 200, "No results", "text/html"},
		{"GET", "/elsewhere", 200, `^\{\}$`, "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			w := httptest.NewRecorder()
			r.Write(w, tt.method, tt.path, now)
			if w.Code != tt.status || !regexp.MustCompile(tt.body).MatchString(w.Body.String()) || w.Header().Get("Content-Type") != tt.ctype {
				t.Errorf("got %d %q %q", w.Code, w.Header().Get("Content-Type"), w.Body.String())
			}
		})
	}
	w1, w2 := httptest.NewRecorder(), httptest.NewRecorder()
	r.Write(w1, "POST", "/api/invite", now)
	r.Write(w2, "POST", "/api/invite", now)
	if w1.Body.String() == w2.Body.String() {
		t.Error("two answers carry the same id")
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Routes: []Route{{Path: "/x", Status: 403}}}, "routes[0]: status 403"},
		{Config{Routes: []Route{{Path: "x"}}}, `routes[0]: path "x"`},
		{Config{Default: &Route{Status: 500}}, "default: status 500"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want %q", c.cfg, err, c.want)
		}
	}
}

// TestHeaders: an answer carries the configured headers, Content-Type and
// Content-Length, and nothing else (in particular no Cache-Control the
// application's answer would lack).
func TestHeaders(t *testing.T) {
	r, err := New(Config{
		Headers: map[string]string{"x-frame-options": "DENY", "Cache-Control": "private"},
		Routes:  []Route{{Path: "/api/*", Headers: map[string]string{"cache-control": "no-cache", "X-Api": "2", "Set-Cookie": "id=${id}"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path string
		want map[string]string
	}{
		{"/api/x", map[string]string{"Cache-Control": "no-cache", "X-Api": "2", "Set-Cookie": "", "X-Frame-Options": "DENY", "Content-Type": "application/json", "Content-Length": "0"}},
		{"/", map[string]string{"Cache-Control": "private", "X-Frame-Options": "DENY", "Content-Type": "application/json", "Content-Length": "2"}},
	} {
		w := httptest.NewRecorder()
		r.Write(w, "GET", tt.path, time.Now())
		if len(w.Header()) != len(tt.want) {
			t.Errorf("%s: headers %v, want %v", tt.path, w.Header(), tt.want)
		}
		if c := w.Header().Get("Set-Cookie"); tt.path == "/api/x" && !regexp.MustCompile(`^id=[0-9a-f]{16}$`).MatchString(c) {
			t.Errorf("Set-Cookie %q: placeholder not expanded", c)
		}
		for k, v := range tt.want {
			if k == "Set-Cookie" {
				continue
			}
			if got := w.Header().Get(k); got != v {
				t.Errorf("%s: %s = %q, want %q", tt.path, k, got, v)
			}
		}
	}
	plain, _ := New(Config{})
	w := httptest.NewRecorder()
	plain.Write(w, "GET", "/", time.Now())
	if len(w.Header()) != 2 || w.Header().Get("Cache-Control") != "" {
		t.Errorf("unconfigured answer has headers %v, want only Content-Type and Content-Length", w.Header())
	}
}

func TestHeaderErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Headers: map[string]string{"Bad Name": "x"}}, `shadowban.default: header name "Bad Name"`},
		{Config{Routes: []Route{{Path: "/", Headers: map[string]string{"X-A": "a\r\nSet-Cookie: x"}}}}, "routes[0]: header X-A: value holds a line break"},
		{Config{Headers: map[string]string{"content-length": "3"}}, "header content-length: set by the server"},
		{Config{Headers: map[string]string{"Content-Type": "text/html"}}, "use content_type"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want %q", c.cfg, err, c.want)
		}
	}
}

// TestSet: Set swaps routes, templates and headers at once; a bad
// configuration keeps the running one.
func TestSet(t *testing.T) {
	r, err := New(Config{Routes: []Route{{Path: "/api/invite", Body: `{"ok":true}`}}, Headers: map[string]string{"X-App": "v1"}})
	if err != nil {
		t.Fatal(err)
	}
	answer := func() (string, string) {
		w := httptest.NewRecorder()
		r.Write(w, "POST", "/api/invite", time.Unix(0, 0))
		return w.Body.String(), w.Header().Get("X-App")
	}
	for _, tc := range []struct {
		name       string
		cfg        Config
		wantErr    bool
		body, xapp string
	}{
		{"new template and header", Config{Routes: []Route{{Path: "/api/invite", Body: `{"sent":${unix}}`}}, Headers: map[string]string{"X-App": "v2"}}, false, `{"sent":0}`, "v2"},
		{"bad status kept out", Config{Routes: []Route{{Path: "/api/invite", Status: 500}}}, true, `{"sent":0}`, "v2"},
		{"route removed", Config{}, false, `{}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := r.Set(tc.cfg); (err != nil) != tc.wantErr {
				t.Fatalf("Set: %v", err)
			}
			if body, xapp := answer(); body != tc.body || xapp != tc.xapp {
				t.Errorf("answer %q X-App %q, want %q %q", body, xapp, tc.body, tc.xapp)
			}
		})
	}
}

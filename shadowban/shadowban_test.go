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

package admin_test

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/admin"
)

// TestClient: the client authenticates, posts JSON, decodes answers and
// turns an error answer into an error carrying the API's message.
func TestClient(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	store, err := mitigation.New(mitigation.Config{Now: func() time.Time { return now }}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	h, err := admin.New(admin.Config{Store: store, Token: token, Now: func() time.Time { return now }, Status: func() any { return map[string]int{"rules": 3} }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	c := admin.NewClient(addr, token, "tester@host", time.Minute)
	var st map[string]int
	if err := c.Do("GET", "/v1/status", nil, &st); err != nil || st["rules"] != 3 {
		t.Fatalf("status %v, %v", st, err)
	}
	add := admin.AddRequest{Scope: map[string]string{"ip.src": "203.0.113.7"}, Action: "block", Duration: "1h"}
	if err := c.DoJSON("POST", "/v1/mitigations", add, nil); err != nil {
		t.Fatal(err)
	}
	if ms := store.List(now); len(ms) != 1 || ms[0].Scope.String() != "ip.src=203.0.113.7" {
		t.Errorf("store holds %v", ms)
	}
	bad := admin.AddRequest{Scope: map[string]string{"no.such": "x"}, Action: "block", Duration: "1h"}
	if err := c.DoJSON("POST", "/v1/mitigations", bad, nil); err == nil || !strings.HasPrefix(err.Error(), "admin API: 400 Bad Request: ") {
		t.Errorf("bad request: %v", err)
	}
	if err := admin.NewClient(addr, "wrong-token-wrong-token", "", time.Minute).Do("GET", "/v1/status", nil, nil); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("wrong token: %v", err)
	}
}

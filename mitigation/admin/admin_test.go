package admin_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/admin"
)

const token = "0123456789abcdef0123"

func TestAdminAPI(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	store, err := mitigation.New(mitigation.Config{Now: func() time.Time { return now },
		Allowlist: mitigation.Allowlist{Prefixes: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	h, err := admin.New(admin.Config{Store: store, Token: token, Now: func() time.Time { return now }, Status: func() any { return map[string]int{"rules": 3} }})
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, body, tok string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	for _, tc := range []struct {
		name, method, path, body, token string
		code                            int
		want                            string
	}{
		{"no token", "GET", "/v1/mitigations", "", "", 401, "bearer token"},
		{"wrong token", "GET", "/v1/mitigations", "", "x" + token, 401, "bearer token"},
		{"healthz open", "GET", "/healthz", "", "", 200, "ok"},
		{"status", "GET", "/v1/status", "", token, 200, `"rules": 3`},
		{"add", "POST", "/v1/mitigations", `{"scope":{"ip.src":"203.0.113.7"},"action":"block","duration":"1h","reason":"test"}`, token, 201, `"manual: test"`},
		{"allowlisted", "POST", "/v1/mitigations", `{"scope":{"ip.src":"192.0.2.7"},"action":"block","duration":"1h"}`, token, 409, "allowlist"},
		{"bad action", "POST", "/v1/mitigations", `{"scope":{"ip.src":"203.0.113.8"},"action":"nuke","duration":"1h"}`, token, 400, "nuke"},
		{"bad duration", "POST", "/v1/mitigations", `{"scope":{"ip.src":"203.0.113.8"},"action":"block","duration":"-1h"}`, token, 400, "duration"},
		{"unknown field", "POST", "/v1/mitigations", `{"scope":{"ip.src":"203.0.113.8"},"action":"block","duration":"1h","x":1}`, token, 400, "unknown field"},
		{"list", "GET", "/v1/mitigations", "", token, 200, "203.0.113.7"},
		{"delete bad id", "DELETE", "/v1/mitigations/x", "", token, 400, "id"},
		{"delete", "DELETE", "/v1/mitigations/1", "", token, 204, ""},
		{"delete again", "DELETE", "/v1/mitigations/1", "", token, 404, "no active"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := do(tc.method, tc.path, tc.body, tc.token)
			if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.want) {
				t.Fatalf("%s %s: %d %s; want %d and %q", tc.method, tc.path, w.Code, w.Body.String(), tc.code, tc.want)
			}
		})
	}
	if _, err := admin.New(admin.Config{Store: store, Token: "short"}); err == nil {
		t.Error("a short token accepted")
	}
	if w := do("GET", "/metrics", "", ""); w.Code != http.StatusNotFound {
		t.Errorf("/metrics without a gatherer: %d", w.Code)
	}
}

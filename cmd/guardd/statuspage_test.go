package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestStatusPage: the admin listener serves the live page without the token,
// with the active mitigations by rule and action and the decisions made.
func TestStatusPage(t *testing.T) {
	dir := t.TempDir()
	td := startDaemon(t, dir)
	defer td.stop(t)
	for _, ip := range []string{"203.0.113.7", "203.0.113.8"} {
		cli(t, append([]string{"add", "--scope", "ip.src=" + ip, "--reason", "abuse"}, clientArgs(td)...)...)
	}
	cli(t, append([]string{"add", "--scope", "ip.src=203.0.113.9", "--action", "rate_limit"}, clientArgs(td)...)...)
	for range 20 {
		td.decide(t, "192.0.2.1", "/")
	}
	page := statusPageHTML(t, td)
	for _, want := range []string{`<div class="big" id="active">3</div>`, "manual: abuse", "<td>block</td><td class=\"num\">2</td>", "rate_limit", "standalone"} {
		if !strings.Contains(page, want) {
			t.Errorf("status page lacks %q", want)
		}
	}
	if strings.Contains(page, "203.0.113.") {
		t.Error("the status page, served without the token, shows an address")
	}
	if !strings.Contains(page, `id="rate">`) || strings.Contains(page, `id="rate">0/s`) {
		t.Errorf("no decision rate after 20 decisions:\n%s", page)
	}
}

func statusPageHTML(t *testing.T, td *testDaemon) string {
	t.Helper()
	resp, err := http.Get("http://" + td.d.adminLn.Addr().String() + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /status: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	return string(b)
}

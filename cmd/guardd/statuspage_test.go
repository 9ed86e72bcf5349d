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
	cli(t, append([]string{"add", "--scope", "ip.src.prefix=198.51.100.0/24", "--action", "challenge"}, clientArgs(td)...)...)
	for range 20 {
		td.decide(t, "192.0.2.1", "/")
	}
	for range 3 {
		td.decide(t, "203.0.113.7", "/")
		td.decide(t, "198.51.100.20", "/")
	}
	page := statusPageHTML(t, td)
	for _, want := range []string{`<div class="big" id="active">4</div>`, "manual: abuse", "<td>block</td><td class=\"num\">2</td>", "rate_limit", "standalone",
		// The summary: challenged beside blocked, the answers by outcome, the kinds of keys.
		`id="acted-block">2</div>blocked`, `id="acted-challenge">1</div>challenged`, `<tr><td>block</td><td class="num">`, `<tr><td>challenge</td><td class="num">`,
		`<td><code>ip.src</code></td><td class="num">3</td>`, `<td><code>ip.src.prefix</code></td><td class="num">1</td>`} {
		if !strings.Contains(page, want) {
			t.Errorf("status page lacks %q", want)
		}
	}
	if strings.Contains(page, "203.0.113.") || strings.Contains(page, "198.51.100.") {
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

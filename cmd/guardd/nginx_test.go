//go:build integration

package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/guardd/guardd/mitigation/nginxtest"
	"github.com/guardd/guardd/testwait"
)

// The nginx configuration of the tests: docs/nginx.md's upstreams and
// server (docsNginx) in an http block of temporary paths.
const nginxConf = `
daemon off;
master_process on;
worker_processes 1;
user root;
pid {{dir}}/nginx.pid;
error_log {{dir}}/error.log info;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path {{dir}}/body;
    proxy_temp_path {{dir}}/proxy;
    fastcgi_temp_path {{dir}}/fastcgi;
    uwsgi_temp_path {{dir}}/uwsgi;
    scgi_temp_path {{dir}}/scgi;
    log_format guardd '$remote_addr - $remote_user [$time_local] "$request" '
                      '$status $body_bytes_sent "$http_referer" "$http_user_agent" '
                      '$remote_port $request_time "$host" "$http_x_forwarded_for" '
                      '"$cookie_session" $request_id';
{{docs}}
}
`

const inviteRule = `# METADATA
# title: invitation spam
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 3
#   action: shadowban
#   mitigation_timeout: 10m
package guardd.rules.invite_spam

count if {
	input.http.method == "POST"
	input.http.path == "/api/invite"
}
`

// TestNginxEndToEnd runs the real nginx with docs/nginx.md's configuration in
// front of a test application, and guardd tailing nginx's log and answering
// its auth_request. An attacker is blocked on the request after its rule
// trips; a spammer gets the fake 200 while the application sees nothing; an
// ordinary client from another address keeps getting the application's
// answers; and with guardd gone, nginx fails open.
func TestNginxEndToEnd(t *testing.T) {
	st := startStack(t, "")
	td, base, appHits, inviteHits := st.td, st.base, &st.appHits, &st.inviteHits
	attacker, ordinary, spammer := client("127.0.0.7"), client("127.0.0.8"), client("127.0.0.9")

	// The attacker fails to log in six times: the sixth goes over the limit
	// of 5 a minute and trips the rule once its log line is read.
	for i := range 6 {
		if code, _ := do(t, attacker, "POST", base+"/login"); code != 401 {
			t.Fatalf("login attempt %d: %d, want the app's 401", i, code)
		}
	}
	blockedAt := time.Now()
	testwait.Until(t, patience, "the attacker to be blocked", func() bool { code, _ := do(t, attacker, "GET", base+"/"); return code == 403 })
	t.Logf("blocked %v after the tripping request", time.Since(blockedAt).Round(time.Millisecond))
	hits := appHits.Load()
	for range 3 {
		if code, _ := do(t, attacker, "GET", base+"/account"); code != 403 {
			t.Fatalf("attacker not blocked: %d", code)
		}
	}
	if appHits.Load() != hits {
		t.Fatal("blocked requests reached the app")
	}
	// An ordinary client from another address is served by the app.
	if code, body := do(t, ordinary, "GET", base+"/"); code != 200 || !strings.Contains(body, "hello from the app") {
		t.Fatalf("ordinary client: %d %q", code, body)
	}

	// The spammer's invitations go through until the rule trips, then get the
	// fake success while the app sees none of them.
	var realHeader http.Header
	for i := range 4 {
		resp := doResp(t, spammer, "POST", base+"/api/invite")
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"real":true`) {
			t.Fatalf("invite %d: %d %q", i, resp.StatusCode, b)
		}
		realHeader = resp.Header
	}
	testwait.Until(t, patience, "the spammer to be shadow-banned", func() bool {
		before := inviteHits.Load()
		code, body := do(t, spammer, "POST", base+"/api/invite")
		return code == 200 && body == `{"ok":true}` && inviteHits.Load() == before
	})
	before := inviteHits.Load()
	for range 5 {
		if code, body := do(t, spammer, "POST", base+"/api/invite"); code != 200 || body != `{"ok":true}` {
			t.Fatalf("shadow-banned invite: %d %q", code, body)
		}
	}
	if inviteHits.Load() != before {
		t.Fatal("shadow-banned invitations reached the app")
	}
	// The fake answer carries the header names of the real one, no more, no
	// fewer (shadowban.headers adds X-Frame-Options as the app does).
	resp := doResp(t, spammer, "POST", base+"/api/invite")
	resp.Body.Close()
	if got, want := headerNames(resp.Header), headerNames(realHeader); got != want {
		t.Errorf("shadow-ban answer has headers %s, the application's %s", got, want)
	}
	if resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("shadow-ban answer headers %v", resp.Header)
	}
	// Shadow-banned only where its rule's mitigation expression says (the
	// count expression: POST /api/invite); other pages are served.
	if code, body := do(t, spammer, "GET", base+"/"); code != 200 || !strings.Contains(body, "hello from the app") {
		t.Fatalf("spammer elsewhere: %d %q", code, body)
	}

	// A manual rate limit: 429 with honest headers.
	var out, errb strings.Builder
	admin := []string{"--admin", td.d.adminLn.Addr().String(), "--token-file", filepath.Join(td.dir, "state", "admin.token")}
	if rc := runDecisions(append([]string{"add", "--scope", "ip.src=127.0.0.8", "--action", "rate_limit", "--duration", "90s"}, admin...), &out, &errb); rc != 0 {
		t.Fatal(errb.String())
	}
	resp = doResp(t, ordinary, "GET", base+"/")
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || resp.Header.Get("RateLimit") == "" {
		t.Fatalf("rate limited: %d %v", resp.StatusCode, resp.Header)
	}
	t.Logf("429 headers: Retry-After=%s RateLimit=%q", resp.Header.Get("Retry-After"), resp.Header.Get("RateLimit"))

	// guardd gone: nginx fails open.
	td.stop(t)
	if code, body := do(t, client("127.0.0.10"), "GET", base+"/"); code != 200 || !strings.Contains(body, "hello from the app") {
		t.Fatalf("with guardd down: %d %q, want fail-open 200", code, body)
	}
}

// stack is nginx with docs/nginx.md's configuration in front of a test
// application, and guardd tailing nginx's log and answering its
// auth_request.
type stack struct {
	td                  *testDaemon
	base                string
	appHits, inviteHits atomic.Int64
}

// startStack starts the stack; decision is YAML for guardd's decision key.
func startStack(t *testing.T, decision string) *stack {
	st := &stack{}
	nginx := nginxtest.Path(t)
	dir := t.TempDir()
	app := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st.appHits.Add(1)
		switch r.URL.Path {
		case "/login":
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, "wrong password\n")
		case "/api/invite":
			st.inviteHits.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Frame-Options", "DENY")
			io.WriteString(w, `{"ok":true,"real":true}`)
		default:
			io.WriteString(w, "hello from the app\n")
		}
	})}
	appLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go app.Serve(appLn)
	t.Cleanup(func() { app.Close() })

	// guardd, tailing the log nginx will write.
	os.MkdirAll(filepath.Join(dir, "rules"), 0o755)
	os.WriteFile(filepath.Join(dir, "rules", "login.rego"), []byte(testRule), 0o644)
	os.WriteFile(filepath.Join(dir, "rules", "invite.rego"), []byte(inviteRule), 0o644)
	format := `log_format guardd '$remote_addr - $remote_user [$time_local] "$request" ' '$status $body_bytes_sent "$http_referer" "$http_user_agent" ' '$remote_port $request_time "$host" "$http_x_forwarded_for" ' '"$cookie_session" $request_id';`
	writeTestConfig(t, dir, fmt.Sprintf(`
log:
  format: %q
%s
shadowban:
  headers:
    X-Frame-Options: DENY
  routes:
    - method: POST
      path: /api/invite
      body: '{"ok":true}'
`, format, decision))
	td := startDaemon(t, dir)

	port := nginxtest.FreePort(t)
	nginxtest.Start(t, nginx, dir, testNginxConf(t, dir, td, appLn.Addr().String(), port))
	st.td, st.base = td, fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHTTP(t, st.base+"/")
	return st
}

// TestNginxDecisionCount: with decision.count, a rule that reads only the
// request counts when nginx asks, so the request that trips it is already
// shadow-banned (the application never sees it), and the log lines of the
// requests counted that way do not count them again.
func TestNginxDecisionCount(t *testing.T) {
	st := startStack(t, "decision: {listen: 127.0.0.1:0, count: true}")
	spammer := client("127.0.0.11")
	for i := range 3 {
		if code, body := do(t, spammer, "POST", st.base+"/api/invite"); code != 200 || !strings.Contains(body, `"real":true`) {
			t.Fatalf("invite %d: %d %q", i, code, body)
		}
	}
	events := st.td.d.pm.Events.WithLabelValues("nginx_log")
	testwait.Until(t, patience, "the three log lines to be read", func() bool { return testutil.ToFloat64(events) >= 3 })
	// Counted at decision time and again from the log, the count would be 6
	// and the rule would have tripped by now.
	if n := testutil.ToFloat64(st.td.d.pm.Trips.WithLabelValues("invite_spam", "shadowban")); n != 0 {
		t.Fatalf("invite_spam tripped after 3 invitations (limit 3): counted twice?")
	}
	// The fourth trips the rule when nginx asks: it gets the fake 200 and
	// the application does not see it.
	code, body := do(t, spammer, "POST", st.base+"/api/invite")
	if code != 200 || body != `{"ok":true}` || st.inviteHits.Load() != 3 {
		t.Fatalf("the tripping invitation: %d %q, app saw %d invitations, want the fake 200 and 3", code, body, st.inviteHits.Load())
	}
}

// testNginxConf is nginxConf with docs/nginx.md's server, pointed at td's
// decision listener, the application at app and port, under dir.
func testNginxConf(t *testing.T, dir string, td *testDaemon, app string, port int) string {
	t.Helper()
	return strings.NewReplacer("{{dir}}", dir, "{{decision}}", td.d.decisionLn.Addr().String(), "{{app}}", app,
		"{{port}}", fmt.Sprint(port)).Replace(strings.Replace(nginxConf, "{{docs}}", docsNginx(t), 1))
}

func client(src string) *http.Client { return nginxtest.Client(src, 5*time.Second) }

func doResp(t *testing.T, c *http.Client, method, url string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), method, url, strings.NewReader(""))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// headerNames lists h's names, sorted, without the per-answer Date.
func headerNames(h http.Header) string {
	var names []string
	for k := range h {
		if k != "Date" {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

// docsNginx returns the nginx block of docs/nginx.md that holds the upstreams
// and the protected server, pointed at the test's guardd, application and
// port, logging to dir: the tests run the configuration the docs give.
func docsNginx(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../docs/nginx.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range strings.Split(string(data), "```nginx\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		if !strings.Contains(block, "upstream app") {
			continue
		}
		for _, want := range []string{"127.0.0.1:9480", "127.0.0.1:8080", "listen 80;", "server_name example.com;"} {
			if !strings.Contains(block, want) {
				t.Fatalf("docs/nginx.md's server block lost %q", want)
			}
		}
		return strings.NewReplacer("127.0.0.1:9480", "{{decision}}", "127.0.0.1:8080", "{{app}}",
			"listen 80;", "listen 127.0.0.1:{{port}};",
			"server_name example.com;", "server_name example.com;\n    access_log {{dir}}/access.log guardd;").Replace(block)
	}
	t.Fatal("docs/nginx.md has no nginx block with upstream app")
	return ""
}

func do(t *testing.T, c *http.Client, method, url string) (int, string) {
	t.Helper()
	resp := doResp(t, c, method, url)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func waitHTTP(t *testing.T, url string) {
	testwait.Until(t, patience, "nginx to listen", func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})
}

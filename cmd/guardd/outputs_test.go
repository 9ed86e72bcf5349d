package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/guardd/guardd/mitigation/crowdsec"
	"github.com/guardd/guardd/testwait"
)

// TestDaemonOutputs runs the daemon with the CrowdSec bouncer API, the
// blocklist feed and the nginx geo file on, adds a ban through the admin
// API, and sees it in all three.
func TestDaemonOutputs(t *testing.T) {
	dir := t.TempDir()
	csAddr, blAddr := freeAddr(t), freeAddr(t)
	geo := filepath.Join(dir, "guardd-blocked.conf")
	writeTestConfig(t, dir, fmt.Sprintf(`
crowdsec: {listen: %q}
blocklist:
  listen: %q
  nginx_geo: {path: %q, poll_interval: 20ms}
`, csAddr, blAddr, geo))
	os.MkdirAll(filepath.Join(dir, "state"), 0o700)
	key, err := crowdsec.AddBouncer(filepath.Join(dir, "state", crowdsec.KeyFileName), "fw-test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	td := startDaemon(t, dir)
	defer td.stop(t)
	var out, errb bytes.Buffer
	admin := []string{"--admin", td.d.adminLn.Addr().String(), "--token-file", filepath.Join(dir, "state", "admin.token")}
	if rc := runDecisions(append([]string{"add", "--scope", "ip.src=203.0.113.99", "--action", "block", "--duration", "1h"}, admin...), &out, &errb); rc != 0 {
		t.Fatal(errb.String())
	}
	get := func(url string, h map[string]string) (int, string) {
		req, _ := http.NewRequest("GET", url, nil)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	testwait.Until(t, patience, "the feed to list the ban", func() bool {
		code, body := get("http://"+blAddr+"/blocklist/ipv4.txt", nil)
		return code == 200 && strings.Contains(body, "203.0.113.99")
	})
	code, body := get("http://"+csAddr+"/v1/decisions/stream?startup=true", map[string]string{"X-Api-Key": key})
	if code != 200 || !strings.Contains(body, `"value":"203.0.113.99"`) || !strings.Contains(body, `"type":"ban"`) {
		t.Fatalf("crowdsec stream: %d %s", code, body)
	}
	if code, _ := get("http://"+csAddr+"/v1/decisions/stream?startup=true", map[string]string{"X-Api-Key": "wrong"}); code != 403 {
		t.Fatalf("wrong bouncer key: %d, want 403", code)
	}
	testwait.Until(t, patience, "the geo file", func() bool {
		b, _ := os.ReadFile(geo)
		return strings.Contains(string(b), "203.0.113.99")
	})
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

//go:build integration

package blocklist

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/nginxtest"
	"github.com/guardd/guardd/testwait"
)

// TestGeoWithRunningNginx runs nginx on 127.0.0.1 with the geo file and
// Geo.Run reloading it: a block on 127.0.0.1 turns answers into 403, its
// deletion back into 200.
func TestGeoWithRunningNginx(t *testing.T) {
	nginx := nginxtest.Path(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o755) // nginx workers may run as nobody
	port := nginxtest.FreePort(t)
	geo := filepath.Join(dir, "blocked.conf")
	conf := filepath.Join(dir, "nginx.conf")
	os.WriteFile(conf, []byte(fmt.Sprintf(`pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
worker_processes 1;
events {}
http {
    access_log off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    geo $guardd_blocked { default 0; include %[2]s; }
    server {
        listen 127.0.0.1:%[3]d;
        location / {
            if ($guardd_blocked) { return 403; }
            return 200 "ok\n";
        }
    }
}
`, dir, geo, port)), 0o644)
	nginxArgs := []string{"-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", conf}

	store, err := mitigation.New(mitigation.Config{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	reload := append(append([]string{nginx}, nginxArgs...), "-s", "reload")
	g, err := NewGeo(GeoConfig{Path: geo, ReloadCommand: reload, ReloadInterval: 200 * time.Millisecond, PollInterval: 20 * time.Millisecond}, store, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	g.step(context.Background(), time.Now()) // the file must exist before nginx starts
	if out, err := exec.Command(nginx, nginxArgs...).CombinedOutput(); err != nil {
		t.Skipf("nginx did not start: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		// Stop the master we started, by the PID it wrote.
		b, err := os.ReadFile(filepath.Join(dir, "nginx.pid"))
		if err != nil {
			return
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			syscall.Kill(pid, syscall.SIGQUIT)
			testwait.For(5*time.Second, func() bool { return syscall.Kill(pid, 0) != nil })
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- g.Run(ctx) }()
	defer func() { cancel(); <-done }()

	c := &http.Client{Timeout: 2 * time.Second}
	status := func() int {
		resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	waitFor := func(want int) {
		t.Helper()
		if !testwait.For(15*time.Second, func() bool { return status() == want }) {
			b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("status %d, want %d; nginx error log:\n%s", status(), want, b)
		}
	}
	waitFor(200)
	m, _, err := store.Add(mitigation.Mitigation{Rule: "it", Action: mitigation.ActionBlock,
		Scope: mitigation.Scope{{Name: "ip.src.prefix", Value: "127.0.0.0/8"}}, Expires: time.Now().Add(time.Hour)}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	waitFor(403)
	store.Delete(m.ID)
	waitFor(200)
}

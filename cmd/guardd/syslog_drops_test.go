//go:build integration

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/guardd/guardd/mitigation/nginxtest"
	"github.com/guardd/guardd/testwait"
)

// TestNginxSyslogDrops: guardd, a process of its own, is stopped on purpose
// (SIGSTOP) while nginx logs requests to it over UDP with a small socket
// buffer; once it goes on, guardd_syslog_dropped_datagrams_total holds
// what the kernel dropped, and every request is either counted or dropped.
func TestNginxSyslogDrops(t *testing.T) {
	nginx := nginxtest.Path(t)
	dir := t.TempDir()
	port, admin, nport := freeUDPPort(t), nginxtest.FreePort(t), nginxtest.FreePort(t)
	writeTestConfig(t, dir, fmt.Sprintf("log:\n  format: %q\n", recommendedFormat))
	cfgPath := filepath.Join(dir, "guardd.yaml")
	b, _ := os.ReadFile(cfgPath)
	conf := strings.Replace(string(b), "sources: {", fmt.Sprintf(`sources: {syslog: {listen: ["udp:127.0.0.1:%d"], read_buffer: 1}, `, port), 1)
	conf = strings.Replace(conf, "admin: {listen: 127.0.0.1:0}", fmt.Sprintf("admin: {listen: 127.0.0.1:%d}", admin), 1)
	os.WriteFile(cfgPath, []byte(conf), 0o644)
	cmd := guarddProcess(t, "run", "--config", cfgPath)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	metrics := func() map[string]float64 {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", admin))
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		out := map[string]float64{}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			name, v, ok := strings.Cut(sc.Text(), " ")
			if ok && strings.HasPrefix(name, "guardd_syslog_") && strings.Contains(name, `network="udp"`) {
				out[name[:strings.IndexByte(name, '{')]], _ = strconv.ParseFloat(v, 64)
			}
		}
		return out
	}
	testwait.Until(t, patience, "guardd to serve its metrics", func() bool { return metrics() != nil })

	// nginx without the decision API: only its log matters here.
	ngx := fmt.Sprintf(`daemon off;
master_process on;
worker_processes 1;
user root;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 64; }
http {
    %[2]s
    %[3]s
    server {
        listen 127.0.0.1:%[4]d;
        location / { return 204; }
    }
}
`, dir, recommendedFormat, strings.Replace(docsSyslogLine(t), "unix:/run/guardd/nginx.sock", fmt.Sprintf("127.0.0.1:%d", port), 1), nport)
	nginxtest.Start(t, nginx, dir, ngx)
	base := fmt.Sprintf("http://127.0.0.1:%d", nport)
	testwait.Until(t, patience, "nginx to listen", func() bool {
		c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err == nil {
			c.Close()
		}
		return err == nil
	})

	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	const requests = 400
	c := &http.Client{Timeout: 5 * time.Second}
	for i := range requests {
		resp, err := c.Get(fmt.Sprintf("%s/r/%d", base, i))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	cmd.Process.Signal(syscall.SIGCONT)
	var m map[string]float64
	testwait.Until(t, patience, "every request read or counted as dropped", func() bool {
		m = metrics()
		return m["guardd_syslog_messages_total"]+m["guardd_syslog_dropped_datagrams_total"] == requests
	})
	if m["guardd_syslog_dropped_datagrams_total"] == 0 {
		t.Fatalf("nothing dropped with guardd stopped and a minimal buffer: %v", m)
	}
	t.Logf("%d requests while guardd was stopped: %v", requests, m)
}

// recommendedFormat is docs/nginx.md's log_format guardd.
const recommendedFormat = `log_format guardd '$remote_addr - $remote_user [$time_local] "$request" ' '$status $body_bytes_sent "$http_referer" "$http_user_agent" ' '$remote_port $request_time "$host" "$http_x_forwarded_for" ' '"$cookie_session" $request_id';`

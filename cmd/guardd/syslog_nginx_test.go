//go:build integration

package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/guardd/guardd/ingest/syslog"
	"github.com/guardd/guardd/mitigation/nginxtest"
	"github.com/guardd/guardd/testwait"
)

// docsSyslogLine returns docs/nginx.md's access_log line for syslog.
func docsSyslogLine(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../docs/nginx.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "access_log syslog:server=unix:/run/guardd/nginx.sock") {
			return l
		}
	}
	t.Fatal("docs/nginx.md lost its access_log syslog line")
	return ""
}

// syslogStack is nginx with docs/nginx.md's configuration, logging to
// guardd over syslog instead of a file.
type syslogStack struct {
	td       *testDaemon
	base     string
	requests atomic.Int64 // requests the test made through nginx
}

// startSyslogStack starts guardd listening on listen (a sources.syslog.listen
// entry) and nginx writing access_log as accessLog says.
func startSyslogStack(t *testing.T, dir, listen, accessLog string) *syslogStack {
	st := &syslogStack{}
	nginx := nginxtest.Path(t)
	app := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/login" {
			w.WriteHeader(http.StatusUnauthorized)
		}
		fmt.Fprintln(w, "hello from the app")
	})}
	appLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go app.Serve(appLn)
	t.Cleanup(func() { app.Close() })
	format := `log_format guardd '$remote_addr - $remote_user [$time_local] "$request" ' '$status $body_bytes_sent "$http_referer" "$http_user_agent" ' '$remote_port $request_time "$host" "$http_x_forwarded_for" ' '"$cookie_session" $request_id';`
	// The tailed file stays empty: nginx logs only to syslog. Both sources
	// run, merged.
	writeTestConfig(t, dir, fmt.Sprintf("log:\n  format: %q\n", format))
	cfgPath := filepath.Join(dir, "guardd.yaml")
	b, _ := os.ReadFile(cfgPath)
	b = []byte(strings.Replace(string(b), "sources: {nginx: {", fmt.Sprintf("sources: {syslog: {listen: [%q]}, nginx: {", listen), 1))
	os.WriteFile(cfgPath, b, 0o644)
	st.td = startDaemon(t, dir)
	t.Cleanup(func() { st.td.cancel(); <-st.td.done })

	port := nginxtest.FreePort(t)
	conf := strings.Replace(testNginxConf(t, dir, st.td, appLn.Addr().String(), port),
		fmt.Sprintf("access_log %s/access.log guardd;", dir), accessLog, 1)
	nginxtest.Start(t, nginx, dir, conf)
	st.base = fmt.Sprintf("http://127.0.0.1:%d", port)
	testwait.Until(t, patience, "nginx to listen", func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return st
}

func (st *syslogStack) do(t *testing.T, c *http.Client, method, path string) int {
	t.Helper()
	st.requests.Add(1)
	code, _ := do(t, c, method, st.base+path)
	return code
}

// TestNginxSyslog: nginx sends its access log over syslog, as docs/nginx.md
// says, over a Unix datagram socket and UDP, and through a relay that
// forwards over TCP with octet counting as rsyslog does; guardd counts
// every line once, a rule trips, and the next request through nginx is
// refused, as with a tailed file.
func TestNginxSyslog(t *testing.T) {
	line := docsSyslogLine(t)
	for _, tc := range []struct {
		name    string
		network syslog.Network
		setup   func(t *testing.T, dir string) (listen, accessLog string)
	}{
		{"unixgram", syslog.Unixgram, func(t *testing.T, dir string) (string, string) {
			sock := filepath.Join(dir, "nginx.sock")
			return "unixgram:" + sock, strings.Replace(line, "/run/guardd/nginx.sock", sock, 1)
		}},
		{"udp", syslog.UDP, func(t *testing.T, dir string) (string, string) {
			port := freeUDPPort(t)
			return fmt.Sprintf("udp:127.0.0.1:%d", port), strings.Replace(line, "unix:/run/guardd/nginx.sock", fmt.Sprintf("127.0.0.1:%d", port), 1)
		}},
		{"tcp", syslog.TCP, func(t *testing.T, dir string) (string, string) {
			port := nginxtest.FreePort(t)
			relay := startRelay(t, fmt.Sprintf("127.0.0.1:%d", port))
			return fmt.Sprintf("tcp:127.0.0.1:%d", port), strings.Replace(line, "unix:/run/guardd/nginx.sock", relay, 1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			listen, accessLog := tc.setup(t, dir)
			st := startSyslogStack(t, dir, listen, accessLog)
			attacker, ordinary := client("127.0.0.7"), client("127.0.0.8")
			for range 3 {
				if code := st.do(t, ordinary, "GET", "/"); code != 200 {
					t.Fatalf("ordinary client: %d", code)
				}
			}
			for i := range 6 {
				if code := st.do(t, attacker, "POST", "/login"); code != 401 {
					t.Fatalf("login attempt %d: %d, want the app's 401", i, code)
				}
			}
			testwait.Until(t, patience, "the attacker to be blocked", func() bool { return st.do(t, attacker, "GET", "/") == 403 })
			if code := st.do(t, ordinary, "GET", "/"); code != 200 {
				t.Fatalf("ordinary client after the trip: %d", code)
			}
			// Every request's line arrives, once.
			d := st.td.d
			events := d.pm.Events.WithLabelValues("nginx_log")
			testwait.Until(t, patience, "every line read", func() bool {
				return int64(testutil.ToFloat64(events)) == st.requests.Load()
			})
			s := d.syslog.Stats(tc.network)
			if s.Messages != st.requests.Load() || s.Malformed != 0 || s.Dropped != 0 {
				t.Fatalf("syslog stats %+v after %d requests", s, st.requests.Load())
			}
			if n := testutil.ToFloat64(d.pm.Trips.WithLabelValues("test_login", "block")); n != 1 {
				t.Errorf("trips %v, want 1", n)
			}
			// The metrics are exported.
			if n := gatherCounter(t, d, "guardd_syslog_messages_total", tc.network.String()); int64(n) != s.Messages {
				t.Errorf("guardd_syslog_messages_total %v, want %d", n, s.Messages)
			}
			t.Logf("%d requests, %d syslog messages, %d events", st.requests.Load(), s.Messages, int64(testutil.ToFloat64(events)))
		})
	}
}

// gatherCounter reads the named counter with network from d's registry.
func gatherCounter(t *testing.T, d *daemon, name, network string) float64 {
	t.Helper()
	mfs, err := d.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "network" && l.GetValue() == network {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{network=%q}", name, network)
	return 0
}

func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// startRelay receives datagrams on a UDP port of loopback and forwards each
// to guardd over TCP with octet counting (RFC 6587), as rsyslog's omfwd
// does; it returns the UDP address. It dials when the first datagram
// arrives (guardd listens by then).
func startRelay(t *testing.T, to string) string {
	t.Helper()
	in, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	go func() {
		buf := make([]byte, 64<<10)
		var out net.Conn
		defer func() {
			if out != nil {
				out.Close()
			}
		}()
		for {
			n, err := in.Read(buf)
			if err != nil {
				return
			}
			if out == nil {
				if out, err = net.Dial("tcp", to); err != nil {
					return
				}
			}
			frame := append(strconv.AppendInt(nil, int64(n), 10), ' ')
			if _, err := out.Write(append(frame, buf[:n]...)); err != nil {
				return
			}
		}
	}()
	return in.LocalAddr().String()
}

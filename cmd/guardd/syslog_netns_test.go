//go:build integration

package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/sys/unix"

	"github.com/guardd/guardd/mitigation/nginxtest"
	"github.com/guardd/guardd/testwait"
)

const hostRule = `# METADATA
# title: failed logins per sending host
# custom:
#   characteristics: [syslog.host]
#   period: 1m
#   requests_per_period: 3
#   action: log
#   mitigation_timeout: 10m
package guardd.rules.host_logins

count if {
	input.syslog.host != ""
	input.http.path == "/login"
	input.http.status == 401
}
`

// inNetns runs f on a thread of its own in the named network namespace:
// sockets f opens stay in it. The thread is never returned to the runtime.
func inNetns(t *testing.T, name string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		fd, err := unix.Open("/run/netns/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Error(err)
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			t.Error(err)
			return
		}
		f()
	}()
	<-done
	if t.Failed() {
		t.FailNow()
	}
}

func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// TestNginxSyslogTwoHosts: two nginx "hosts", each in a network and UTS
// namespace of its own with its own host name, send their access logs over
// UDP to one guardd in a third namespace (the collector), across veth
// links; their lines reach the rules with syslog.host telling the hosts
// apart, so a rule keyed on it counts each host on its own.
func TestNginxSyslogTwoHosts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for network namespaces")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare(1) not installed")
	}
	nginx := nginxtest.Path(t)
	id := fmt.Sprintf("gd-sl-%d", os.Getpid())
	coll, hosts := id+"-c", []string{id + "-a", id + "-b"}
	for _, ns := range append([]string{coll}, hosts...) {
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			t.Skipf("ip netns add: %v: %s", err, out)
		}
		t.Cleanup(func() { exec.Command("ip", "netns", "delete", ns).Run() })
		ipCmd(t, "-n", ns, "link", "set", "lo", "up")
	}
	// Host i is 10.231.i.2, linked to the collector's 10.231.i.1, and
	// routes through it (to 10.231.0.1, where guardd listens).
	for i, ns := range hosts {
		peer := fmt.Sprintf("h%d", i)
		ipCmd(t, "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", peer, "netns", coll)
		ipCmd(t, "-n", ns, "addr", "add", fmt.Sprintf("10.231.%d.2/30", i), "dev", "eth0")
		ipCmd(t, "-n", ns, "link", "set", "eth0", "up")
		ipCmd(t, "-n", ns, "route", "add", "default", "via", fmt.Sprintf("10.231.%d.1", i))
		ipCmd(t, "-n", coll, "addr", "add", fmt.Sprintf("10.231.%d.1/30", i), "dev", peer)
		ipCmd(t, "-n", coll, "link", "set", peer, "up")
	}

	// guardd and the application, their sockets in the collector.
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "rules"), 0o755)
	os.WriteFile(filepath.Join(dir, "rules", "host.rego"), []byte(hostRule), 0o644)
	format := `log_format guardd '$remote_addr - $remote_user [$time_local] "$request" ' '$status $body_bytes_sent "$http_referer" "$http_user_agent" ' '$remote_port $request_time "$host" "$http_x_forwarded_for" ' '"$cookie_session" $request_id';`
	writeTestConfig(t, dir, fmt.Sprintf("log:\n  format: %q\ndecision: {listen: \"10.231.0.1:0\"}\n", format))
	cfgPath := filepath.Join(dir, "guardd.yaml")
	b, _ := os.ReadFile(cfgPath)
	os.WriteFile(cfgPath, []byte(strings.Replace(string(b), "sources: {nginx: {", `sources: {syslog: {listen: ["udp:10.231.0.1:5514"]}, nginx: {`, 1)), 0o644)
	var (
		td    *testDaemon
		appLn net.Listener
	)
	inNetns(t, coll, func() {
		td = startDaemon(t, dir)
		var err error
		if appLn, err = net.Listen("tcp", "10.231.0.1:0"); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(func() { td.cancel(); <-td.done })
	app := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/login" {
			w.WriteHeader(http.StatusUnauthorized)
		}
		io.WriteString(w, "hello from the app\n")
	})}
	go app.Serve(appLn)
	t.Cleanup(func() { app.Close() })

	// Two nginx, each in its host's namespaces, named web-0 and web-1.
	line := strings.Replace(docsSyslogLine(t), "unix:/run/guardd/nginx.sock", "10.231.0.1:5514", 1)
	clients := make([]*http.Client, len(hosts))
	for i, ns := range hosts {
		hdir := filepath.Join(dir, ns)
		os.MkdirAll(hdir, 0o755)
		conf := strings.Replace(testNginxConf(t, hdir, td, appLn.Addr().String(), 8080),
			fmt.Sprintf("access_log %s/access.log guardd;", hdir), line, 1)
		startNginxIn(t, nginx, ns, fmt.Sprintf("web-%d", i), hdir, conf)
		clients[i] = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
			Dial: func(network, addr string) (c net.Conn, err error) {
				inNetns(t, ns, func() { c, err = net.DialTimeout(network, addr, 2*time.Second) })
				return c, err
			}}}
		testwait.Until(t, patience, ns+"'s nginx to answer", func() bool {
			resp, err := clients[i].Get("http://127.0.0.1:8080/")
			if err == nil {
				resp.Body.Close()
			}
			return err == nil
		})
	}
	tripped := func() []string {
		var out []string
		for _, m := range td.d.store.List(time.Now()) {
			if m.Rule == "host_logins" {
				out = append(out, m.Scope.String())
			}
		}
		slices.Sort(out)
		return out
	}
	login := func(i int) {
		resp, err := clients[i].Post("http://127.0.0.1:8080/login", "text/plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Fatalf("login through web-%d: %d", i, resp.StatusCode)
		}
	}
	// Three failed logins through each host: at the limit, nothing trips
	// (with one syslog.host for both, the fourth would have tripped it).
	for range 3 {
		login(0)
		login(1)
	}
	events := td.d.pm.Events.WithLabelValues("nginx_log")
	testwait.Until(t, patience, "the six lines", func() bool { return testutil.ToFloat64(events) >= 6 })
	if got := tripped(); len(got) != 0 {
		t.Fatalf("tripped %v after three logins per host", got)
	}
	login(0)
	testwait.Until(t, patience, "web-0 to trip", func() bool { return slices.Equal(tripped(), []string{"syslog.host=web-0"}) })
	login(1)
	testwait.Until(t, patience, "web-1 to trip", func() bool {
		return slices.Equal(tripped(), []string{"syslog.host=web-0", "syslog.host=web-1"})
	})
}

// startNginxIn starts nginx in the network namespace ns and a UTS namespace
// of its own named host (nginx writes its host name into the syslog
// header), and stops it when the test ends.
func startNginxIn(t *testing.T, nginx, ns, host, dir, conf string) {
	t.Helper()
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	// ip netns exec, unshare (without --fork) and sh all exec: the process
	// started is nginx's master.
	cmd := exec.Command("ip", "netns", "exec", ns, "unshare", "--uts", "--", "sh", "-c",
		`hostname "$0" && exec "$1" -p "$2" -e "$2/error.log" -c "$3"`, host, nginx, dir, path)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGQUIT)
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
}

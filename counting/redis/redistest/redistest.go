package redistest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/guardd/guardd/testwait"
)

// TB is the part of testing.TB the helpers use.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	TempDir() string
	Cleanup(func())
	Logf(format string, args ...any)
}

// Need skips t when the tools are absent and the test is not root (as root,
// in CI, a missing tool fails).
func Need(t TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Geteuid() == 0 {
				t.Fatalf("%s not installed (scripts/test.sh installs redis-server, redis-sentinel, redis-tools)", tool)
			}
			t.Skipf("%s not installed and not root", tool)
		}
	}
}

// FreePort returns a TCP port free on 127.0.0.1 now.
func FreePort(t TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Server is one redis-server or redis-sentinel process.
type Server struct {
	Addr string
	Port int
	dir  string
	args []string
	bin  string
	pre  []string
	cmd  *exec.Cmd
	t    TB
}

// Start starts redis-server on 127.0.0.1:port (0: a free port) with extra
// config directives ("--appendonly", "yes" ...), and waits for PING.
func Start(t TB, port int, extra ...string) *Server {
	t.Helper()
	return StartIn(t, "", "127.0.0.1", port, extra...)
}

// StartIn starts redis-server bound to host:port inside network namespace
// ns ("" for the test's own), through ip netns exec.
func StartIn(t TB, ns, host string, port int, extra ...string) *Server {
	t.Helper()
	Need(t, "redis-server")
	if port == 0 {
		port = FreePort(t)
	}
	dir := filepath.Join(t.TempDir(), "redis-"+strconv.Itoa(port))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("%v", err)
	}
	s := &Server{Addr: net.JoinHostPort(host, strconv.Itoa(port)), Port: port, dir: dir, bin: "redis-server", t: t}
	if ns != "" {
		s.bin, s.pre = "ip", []string{"netns", "exec", ns, "redis-server"}
	}
	s.args = append([]string{"--port", strconv.Itoa(port), "--bind", host, "--dir", dir,
		"--save", "", "--appendonly", "no", "--protected-mode", "no", "--daemonize", "no",
		"--logfile", filepath.Join(dir, "log")}, extra...)
	s.start()
	t.Cleanup(s.Kill)
	return s
}

// StartSentinel starts redis-sentinel on a free port monitoring master as
// name with quorum 1, and waits for PING.
func StartSentinel(t TB, name string, master *Server) *Server {
	t.Helper()
	Need(t, "redis-sentinel")
	port := FreePort(t)
	dir := filepath.Join(t.TempDir(), "sentinel-"+strconv.Itoa(port))
	os.MkdirAll(dir, 0o755)
	conf := filepath.Join(dir, "sentinel.conf")
	body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\nprotected-mode no\n"+
		"sentinel monitor %s 127.0.0.1 %d 1\nsentinel down-after-milliseconds %s 1000\n"+
		"sentinel failover-timeout %s 5000\nsentinel parallel-syncs %s 1\n",
		port, dir, filepath.Join(dir, "log"), name, master.Port, name, name, name)
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatalf("%v", err)
	}
	s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), Port: port, dir: dir, bin: "redis-sentinel", args: []string{conf}, t: t}
	s.start()
	t.Cleanup(s.Kill)
	return s
}

func (s *Server) start() {
	s.t.Helper()
	s.cmd = exec.Command(s.bin, append(append([]string(nil), s.pre...), s.args...)...)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start %s: %v", s.bin, err)
	}
	if !testwait.For(10*time.Second, func() bool { r, err := s.Cmd("PING"); return err == nil && r == "PONG" }) {
		log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		s.t.Fatalf("%s on %s not answering PING after 10s; log:\n%s", s.bin, s.Addr, log)
	}
}

// PID returns the process ID, or 0 when stopped.
func (s *Server) PID() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Kill kills the process (SIGKILL, by PID) and waits for it. Safe to repeat.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.cmd = nil
}

// Restart kills the process (by PID) and starts it again with the same
// arguments: the same port, dir and logfile, so a cluster node comes back
// with its nodes file (its old identity and view). The new process is
// the Server's, killed by PID at cleanup like the first.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	s.start()
}

// Stop pauses the process (SIGSTOP): it holds its connections and answers
// nothing, like a blackholed server. Cont resumes it.
func (s *Server) Stop() { s.cmd.Process.Signal(syscall.SIGSTOP) }

// Cont resumes a stopped process.
func (s *Server) Cont() { s.cmd.Process.Signal(syscall.SIGCONT) }

// Cmd sends one command (inline protocol) and returns the first line of
// the reply without its type byte; an error reply is an error.
func (s *Server) Cmd(args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", fmt.Errorf("empty reply")
	}
	switch line[0] {
	case '-':
		return "", fmt.Errorf("%s", line[1:])
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return "", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return line[1:], nil
}

// Info returns one field of INFO (e.g. "used_cpu_sys").
func (s *Server) Info(section, field string) (string, error) {
	v, err := s.Cmd("INFO", section)
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(v, "\r\n") {
		if k, val, ok := strings.Cut(l, ":"); ok && k == field {
			return val, nil
		}
	}
	return "", fmt.Errorf("INFO %s has no %s", section, field)
}

// WaitFor is testwait.Until.
//
// Deprecated: call testwait.Until; WaitFor stays only until the branches
// that still call it have merged.
func WaitFor(t TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, timeout, what, cond)
}

// Cluster starts three masters with cluster mode on and joins them with
// redis-cli --cluster create; it returns when CLUSTER INFO says ok on all.
func Cluster(t TB) []*Server {
	t.Helper()
	return ClusterWith(t)
}

// ClusterWith is Cluster with extra config directives on every master
// ("--cluster-require-full-coverage", "no" ...). A master killed and
// restarted (Server.Restart) keeps its nodes file and rejoins.
func ClusterWith(t TB, extra ...string) []*Server {
	t.Helper()
	return cluster(t, 0, extra...)
}

// ClusterReplicas starts three masters and a replica of each (redis-cli
// --cluster create --cluster-replicas 1); it returns the masters and the
// replicas (replicas[i] replicates masters[i]) once CLUSTER INFO says ok
// on all and every replica's link to its master is up.
func ClusterReplicas(t TB, extra ...string) (masters, replicas []*Server) {
	t.Helper()
	all := cluster(t, 1, extra...)
	testwait.Until(t, 30*time.Second, "every replica linked to its master", func() bool {
		masters, replicas = nil, nil
		for _, n := range all {
			if role, _ := n.Info("replication", "role"); role == "master" {
				masters = append(masters, n)
			}
		}
		for _, m := range masters {
			for _, n := range all {
				port, _ := n.Info("replication", "master_port")
				link, _ := n.Info("replication", "master_link_status")
				if port == strconv.Itoa(m.Port) && link == "up" {
					replicas = append(replicas, n)
					break
				}
			}
		}
		return len(masters) == 3 && len(replicas) == 3
	})
	return masters, replicas
}

func cluster(t TB, replicas int, extra ...string) []*Server {
	t.Helper()
	Need(t, "redis-server", "redis-cli")
	var nodes []*Server
	for range 3 * (1 + replicas) {
		port := FreePort(t)
		s := Start(t, port, append([]string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes-" + strconv.Itoa(port) + ".conf",
			"--cluster-node-timeout", "2000"}, extra...)...)
		nodes = append(nodes, s)
	}
	CreateCluster(t, nodes, replicas)
	return nodes
}

// CreateCluster joins nodes (started with cluster mode on) with redis-cli
// --cluster create, replicas replicas per master, and waits for
// cluster_state:ok on every node. A failed create (it can time out on a
// loaded machine) is retried twice after CLUSTER RESET HARD on every node.
func CreateCluster(t TB, nodes []*Server, replicas int) {
	t.Helper()
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, n.Addr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	if replicas > 0 {
		args = append(args, "--cluster-replicas", strconv.Itoa(replicas))
	}
	for try := 1; ; try++ {
		out, err := exec.Command("redis-cli", append(args, "--cluster-yes")...).CombinedOutput()
		if err == nil {
			break
		}
		if try == 3 {
			t.Fatalf("redis-cli --cluster create (%d tries): %v\n%s", try, err, out)
		}
		t.Logf("redis-cli --cluster create: %v, resetting the nodes and trying again:\n%s", err, out)
		for _, n := range nodes {
			n.Cmd("FLUSHALL")
			n.Cmd("CLUSTER", "RESET", "HARD")
		}
	}
	testwait.Until(t, 30*time.Second, "cluster_state:ok on every node", func() bool {
		for _, n := range nodes {
			ci, err := n.Cmd("CLUSTER", "INFO")
			if err != nil || !strings.Contains(ci, "cluster_state:ok") {
				return false
			}
		}
		return true
	})
}

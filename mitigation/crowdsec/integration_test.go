//go:build integration

package crowdsec

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/testwait"
)

// TestFirewallBouncer runs Debian's crowdsec-firewall-bouncer (nftables
// mode) in a network namespace of its own against this server, and checks
// that its nftables sets follow the store: a ban appears, a captcha does
// not, a deleted ban and an expired ban disappear. It needs root; it
// installs crowdsec-firewall-bouncer and nftables with apt-get when absent.
func TestFirewallBouncer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespace, nftables)")
	}
	bouncerBin := ensureBouncer(t)

	ns := fmt.Sprintf("guardd-cs-%d", os.Getpid())
	run(t, "ip", "netns", "add", ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "delete", ns).Run() })
	run(t, "ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")

	ln := listenInNetns(t, ns)
	store, err := mitigation.New(mitigation.Config{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keyFile := filepath.Join(dir, KeyFileName)
	srv, err := New(Config{KeyFile: keyFile}, store, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	key, err := AddBouncer(keyFile, "fw-test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })

	add := func(action mitigation.Action, name, value string, ttl time.Duration) mitigation.Mitigation {
		t.Helper()
		m, ok, err := store.Add(mitigation.Mitigation{Rule: "it", Action: action, Scope: mitigation.Scope{{Name: name, Value: value}}, Expires: time.Now().Add(ttl)}, time.Now())
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		return m
	}
	add(mitigation.ActionBlock, "ip.src", "203.0.113.7", time.Hour)
	add(mitigation.ActionFirewall, "ip.src.prefix", "198.51.100.0/24", time.Hour)
	add(mitigation.ActionRateLimit, "ip.src", "203.0.113.8", time.Hour)
	add(mitigation.ActionBlock, "ip.src", "2001:db8::7", time.Hour)

	cfg := fmt.Sprintf(`mode: nftables
pid_dir: %[1]s
update_frequency: 1s
daemonize: false
log_mode: stdout
log_level: debug
api_url: http://%[2]s/
api_key: %[3]s
disable_ipv6: false
deny_action: DROP
deny_log: false
supported_decisions_types:
  - ban
blacklists_ipv4: guardd-v4
blacklists_ipv6: guardd-v6
nftables:
  ipv4:
    enabled: true
    set-only: false
    table: guardd-cs
    chain: guardd-cs-chain
  ipv6:
    enabled: true
    set-only: false
    table: guardd-cs6
    chain: guardd-cs6-chain
prometheus:
  enabled: false
  listen_addr: 127.0.0.1
  listen_port: 60601
`, dir, ln.Addr().String(), key)
	cfgPath := filepath.Join(dir, "bouncer.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.Command("ip", "netns", "exec", ns, bouncerBin, "-c", cfgPath)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// ip netns exec execs the bouncer in place, so this PID is the bouncer.
	t.Cleanup(func() {
		cmd.Process.Signal(unix.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("bouncer output:\n%s", logs.String())
		}
	})

	set := func(family, table, name string) string {
		out, err := exec.Command("ip", "netns", "exec", ns, "nft", "list", "set", family, table, name).CombinedOutput()
		if err != nil {
			return "error: " + string(out)
		}
		return string(out)
	}
	v4 := func() string { return set("ip", "guardd-cs", "guardd-v4") }
	v6 := func() string { return set("ip6", "guardd-cs6", "guardd-v6") }
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		if !testwait.For(20*time.Second, cond) {
			t.Fatalf("timed out waiting for %s; v4 set:\n%s\nv6 set:\n%s\nbouncer:\n%s", what, v4(), v6(), logs.String())
		}
	}
	waitFor("the startup bans", func() bool {
		s4, s6 := v4(), v6()
		return strings.Contains(s4, "203.0.113.7") && strings.Contains(s4, "198.51.100.0") && strings.Contains(s6, "2001:db8::7")
	})
	if !strings.Contains(v4(), "198.51.100.0/24") {
		// Debian 12's bouncer (0.0.25) makes its set without the interval
		// flag, so a Range decision enters as its network address alone:
		// documented in docs/firewall.md.
		t.Logf("this bouncer stores a Range as one address:\n%s", v4())
	}
	if strings.Contains(v4(), "203.0.113.8") {
		t.Errorf("a captcha decision reached the firewall set:\n%s", v4())
	}

	// A ban added after startup appears, a deleted one disappears.
	later := add(mitigation.ActionBlock, "ip.src", "192.0.2.44", time.Hour)
	waitFor("a ban added later", func() bool { return strings.Contains(v4(), "192.0.2.44") })
	store.Delete(later.ID)
	waitFor("a deleted ban to leave", func() bool { return !strings.Contains(v4(), "192.0.2.44") })

	// An expired ban disappears: the store's Expire feeds its deletion.
	// The clock is passed in, so the test moves it past the ban's expiry
	// rather than sleeping; the ban lasts half an hour, so neither the
	// bouncer nor the kernel can drop it on its own meanwhile.
	short := add(mitigation.ActionBlock, "ip.src", "192.0.2.45", 30*time.Minute)
	waitFor("a short ban", func() bool { return strings.Contains(v4(), "192.0.2.45") })
	if n := store.Expire(short.Expires); n != 1 {
		t.Fatalf("Expire at the short ban's expiry removed %d mitigations, want 1", n)
	}
	waitFor("an expired ban to leave", func() bool { return !strings.Contains(v4(), "192.0.2.45") })

	// The long bans are still there.
	if s := v4(); !strings.Contains(s, "203.0.113.7") || !strings.Contains(s, "198.51.100.0") {
		t.Errorf("long bans gone:\n%s", s)
	}
}

// ensureBouncer returns the firewall bouncer's path, installing the Debian
// package (and nftables) when absent, with services kept from starting.
func ensureBouncer(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("nft"); err != nil {
		aptInstall(t, "nftables")
	}
	for _, p := range []string{"/usr/bin/crowdsec-firewall-bouncer", "/usr/sbin/crowdsec-firewall-bouncer"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	// The package's postinst would start the service and try to register
	// with a local CrowdSec: policy-rc.d refusing (101) keeps it down.
	const policy = "/usr/sbin/policy-rc.d"
	if _, err := os.Stat(policy); os.IsNotExist(err) {
		if err := os.WriteFile(policy, []byte("#!/bin/sh\nexit 101\n"), 0o755); err != nil {
			t.Skipf("cannot write %s: %v", policy, err)
		}
		t.Cleanup(func() { os.Remove(policy) })
	}
	aptInstall(t, "crowdsec-firewall-bouncer")
	for _, p := range []string{"/usr/bin/crowdsec-firewall-bouncer", "/usr/sbin/crowdsec-firewall-bouncer"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("crowdsec-firewall-bouncer unavailable")
	return ""
}

func aptInstall(t *testing.T, pkg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	exec.CommandContext(ctx, "apt-get", "update").Run()
	cmd := exec.CommandContext(ctx, "apt-get", "install", "-y", "--no-install-recommends", pkg)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		// A failing postinst (no local CrowdSec to register with) still
		// leaves the binary unpacked.
		t.Logf("apt-get install %s: %v\n%s", pkg, err, out)
	}
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Skipf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// listenInNetns opens a TCP listener on 127.0.0.1 inside namespace ns: the
// socket is created while this OS thread is in ns, and keeps it.
func listenInNetns(t *testing.T, ns string) net.Listener {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	defer self.Close()
	target, err := os.Open("/var/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		t.Fatal(err)
	}
	ln, lerr := net.Listen("tcp4", "127.0.0.1:0")
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		// This thread is stuck in ns: never unlock it, so it dies with
		// this goroutine instead of running others.
		runtime.Goexit()
	}
	if lerr != nil {
		t.Fatal(lerr)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

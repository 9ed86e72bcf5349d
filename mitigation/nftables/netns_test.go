package nftables

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Kernel tests run as root in a network namespace they create, with the nft
// binary to look at the result (installed with apt-get when absent). They
// skip with -short, when not root, or when namespaces or nftables are not
// available.

var (
	nftOnce sync.Once
	nftErr  error
	nsSeq   atomic.Int32
)

// requireKernel skips t unless nftables tests can run here.
func requireKernel(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("kernel test skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("kernel test needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN for namespaces)")
	}
	nftOnce.Do(func() { nftErr = installNft() })
	if nftErr != nil {
		t.Skipf("nft unavailable: %v", nftErr)
	}
}

func installNft() error {
	if _, err := exec.LookPath("nft"); err == nil {
		return nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("nft not found and no apt-get")
	}
	// No service may start from the install: policy-rc.d exiting 101.
	const policy = "/usr/sbin/policy-rc.d"
	if _, err := os.Stat(policy); os.IsNotExist(err) {
		if err := os.WriteFile(policy, []byte("#!/bin/sh\nexit 101\n"), 0o755); err == nil {
			defer os.Remove(policy)
		}
	}
	env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	for _, args := range [][]string{
		{"apt-get", "update", "-qq"},
		{"apt-get", "install", "-y", "-qq", "-o", "DPkg::Lock::Timeout=300", "nftables"},
	} {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	_, err := exec.LookPath("nft")
	return err
}

// netns is a network namespace made for one test, with lo up.
type netns struct {
	name string
	fd   int
}

// sweepOnce deletes namespaces left by earlier test processes of this
// package that were killed before their cleanup ran: guardd-nft-<pid>-<n>
// whose pid no longer exists.
var sweepOnce sync.Once

func sweepStale() {
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		var pid, n int
		if _, err := fmt.Sscanf(e.Name(), "guardd-nft-%d-%d", &pid, &n); err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
			exec.Command("ip", "netns", "delete", e.Name()).Run()
		}
	}
}

func newNetNS(t testing.TB) *netns {
	t.Helper()
	sweepOnce.Do(sweepStale)
	name := fmt.Sprintf("guardd-nft-%d-%d", os.Getpid(), nsSeq.Add(1))
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Skipf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "delete", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns delete %s: %v: %s", name, err, out)
		}
	})
	fd, err := unix.Open("/run/netns/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	ns := &netns{name: name, fd: fd}
	ns.run(t, "ip", "link", "set", "lo", "up")
	return ns
}

// run runs a command inside the namespace and returns its output.
func (ns *netns) run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns.name}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// addAddrs puts addresses on lo, to send from and to.
func (ns *netns) addAddrs(t testing.TB, addrs ...string) {
	t.Helper()
	for _, a := range addrs {
		bits := "/32"
		args := []string{"ip", "addr", "add"}
		if strings.Contains(a, ":") {
			bits = "/128"
		}
		args = append(args, a+bits, "dev", "lo")
		if bits == "/128" {
			args = append(args, "nodad")
		}
		ns.run(t, args...)
	}
}

// do runs f on a thread inside the namespace; sockets f opens stay there.
func (ns *netns) do(t testing.TB, f func()) {
	t.Helper()
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			done <- err
			return
		}
		defer unix.Close(orig)
		if err := unix.Setns(ns.fd, unix.CLONE_NEWNET); err != nil {
			done <- err
			return
		}
		f()
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			done <- err // the thread stays locked and dies with the goroutine
			return
		}
		runtime.UnlockOSThread()
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// reaches reports whether a UDP datagram from src reaches a socket on dst
// inside the namespace (over lo, through the input hook).
func (ns *netns) reaches(t testing.TB, src, dst string) bool {
	t.Helper()
	var got bool
	var ferr error
	ns.do(t, func() {
		l, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(dst)})
		if err != nil {
			ferr = err
			return
		}
		defer l.Close()
		c, err := net.DialUDP("udp", &net.UDPAddr{IP: net.ParseIP(src)}, l.LocalAddr().(*net.UDPAddr))
		if err != nil {
			ferr = err
			return
		}
		defer c.Close()
		if _, err := c.Write([]byte("guardd")); err != nil {
			ferr = err
			return
		}
		l.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		buf := make([]byte, 16)
		n, from, err := l.ReadFromUDP(buf)
		got = err == nil && string(buf[:n]) == "guardd" && from.IP.Equal(net.ParseIP(src))
	})
	if ferr != nil {
		t.Fatal(ferr)
	}
	return got
}

// elements lists a set's elements as nft prints them, without timeouts:
// addresses, prefixes (a/len) and ranges (lo-hi), sorted.
// hasSet reports whether the set exists in table (inet).
func (ns *netns) hasSet(table, set string) bool {
	return exec.Command("ip", "netns", "exec", ns.name, "nft", "list", "set", "inet", table, set).Run() == nil
}

func (ns *netns) elements(t testing.TB, table, set string) []string {
	t.Helper()
	out := ns.run(t, "nft", "-j", "list", "set", "inet", table, set)
	var doc struct {
		Nftables []struct {
			Set *struct {
				Elem []json.RawMessage `json:"elem"`
			} `json:"set"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("nft -j: %v: %s", err, out)
	}
	var els []string
	for _, o := range doc.Nftables {
		if o.Set == nil {
			continue
		}
		for _, raw := range o.Set.Elem {
			els = append(els, elemString(t, raw))
		}
	}
	slices.Sort(els)
	return els
}

func elemString(t testing.TB, raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var v struct {
		Elem *struct {
			Val json.RawMessage `json:"val"`
		} `json:"elem"`
		Prefix *struct {
			Addr string `json:"addr"`
			Len  int    `json:"len"`
		} `json:"prefix"`
		Range []string `json:"range"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("element %s: %v", raw, err)
	}
	switch {
	case v.Elem != nil:
		return elemString(t, v.Elem.Val)
	case v.Prefix != nil:
		return fmt.Sprintf("%s/%d", v.Prefix.Addr, v.Prefix.Len)
	case len(v.Range) == 2:
		return v.Range[0] + "-" + v.Range[1]
	}
	t.Fatalf("element %s: unknown form", raw)
	return ""
}

// counter returns the packets counted by the rule matching @set in chain.
func (ns *netns) counter(t testing.TB, table, chain, set string) int {
	t.Helper()
	out := ns.run(t, "nft", "list", "chain", "inet", table, chain)
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "@"+set+" ") {
			var n int
			if i := strings.Index(line, "packets "); i >= 0 {
				fmt.Sscanf(line[i:], "packets %d", &n)
				return n
			}
		}
	}
	t.Fatalf("no rule on @%s in chain %s:\n%s", set, chain, out)
	return 0
}

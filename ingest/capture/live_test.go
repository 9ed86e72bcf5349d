//go:build linux

package capture

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/afpacket"
	"github.com/guardd/guardd/ingest/decap"
	"github.com/guardd/guardd/testwait"
	"golang.org/x/sys/unix"
)

// netns creates a network namespace with lo up, removed when the test ends.
// It skips when not root or when ip is missing.
func netns(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("live capture in -short mode")
	}
	if os.Geteuid() != 0 {
		t.Skip("live capture needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("ip (iproute2) not installed")
	}
	name := fmt.Sprintf("guardd-cap-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Skipf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	if out, err := exec.Command("ip", "-n", name, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("ip link set lo up: %v: %s", err, out)
	}
	return name
}

// vethPair makes two namespaces joined by a veth pair vA (10.99.0.1,
// fd99::1) and vB (10.99.0.2, fd99::2) with the given MTU.
func vethPair(t *testing.T, mtu int) (a, b string) {
	t.Helper()
	a, b = netns(t), netns(t)
	if err := ipCmd("link", "add", "vA", "netns", a, "mtu", fmt.Sprint(mtu), "type", "veth", "peer", "name", "vB", "netns", b, "mtu", fmt.Sprint(mtu)); err != nil {
		t.Skip(err)
	}
	for _, c := range [][]string{
		{"-n", a, "addr", "add", "10.99.0.1/24", "dev", "vA"}, {"-n", a, "addr", "add", "fd99::1/64", "dev", "vA", "nodad"}, {"-n", a, "link", "set", "vA", "up"},
		{"-n", b, "addr", "add", "10.99.0.2/24", "dev", "vB"}, {"-n", b, "addr", "add", "fd99::2/64", "dev", "vB", "nodad"}, {"-n", b, "link", "set", "vB", "up"},
	} {
		if err := ipCmd(c...); err != nil {
			t.Fatal(err)
		}
	}
	return a, b
}

func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// TestLiveFragments sends datagrams larger than a 1280-byte MTU over a veth
// pair, so the kernel fragments them (IPv4 and IPv6, like a QUIC Initial on
// a small-MTU path), captures the fragments and reassembles them in Decode.
func TestLiveFragments(t *testing.T) {
	a, b := vethPair(t, 1280)
	var src *LiveSource
	var c4, c6 net.Conn
	var err error
	inNetns(t, b, func() { // receivers, so that no ICMP error fails the writes
		for _, addr := range []string{"10.99.0.2:4433", "[fd99::2]:4433"} {
			var pc net.PacketConn
			if pc, err = net.ListenPacket("udp", addr); err != nil {
				return
			}
			t.Cleanup(func() { pc.Close() })
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	inNetns(t, a, func() {
		if src, err = OpenLive(LiveConfig{Interface: "vA", ReadTimeout: 500 * time.Millisecond}); err != nil {
			return
		}
		if c4, err = net.Dial("udp4", "10.99.0.2:4433"); err != nil {
			return
		}
		c6, err = net.Dial("udp6", "[fd99::2]:4433")
	})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	defer c4.Close()
	defer c6.Close()
	msg := bytes.Repeat([]byte("0123456789abcdef"), 200) // 3200 bytes: three fragments
	for _, c := range []net.Conn{c4, c6} {
		// The first datagram may wait for neighbour resolution; the second
		// goes once the neighbour is known.
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		dst := c.RemoteAddr().(*net.UDPAddr).IP.String()
		testwait.Until(t, 10*time.Second, "the neighbour "+dst+" to be resolved", func() bool {
			out, err := exec.Command("ip", "-n", a, "neigh", "show", "to", dst).Output()
			return err == nil && bytes.Contains(out, []byte("lladdr"))
		})
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
	}
	d := decap.NewDecoder(decap.Config{Defragment: true})
	var p Packet
	whole := map[bool]int{}
	pending := 0
	for {
		err := src.ReadPacket(&p)
		if errors.Is(err, ErrTimeout) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var dp decap.Packet
		err = d.Decode(p.Data, p.LinkType, &dp)
		if errors.Is(err, decap.ErrFragmentPending) {
			pending++
			continue
		}
		if err != nil {
			continue
		}
		if dp.DstPort == 4433 && bytes.Equal(dp.Payload, msg) && dp.Encap&decap.EncapDefrag != 0 {
			whole[dp.Dst.Is6()]++
		}
	}
	if whole[false] == 0 || whole[true] == 0 {
		t.Errorf("reassembled IPv4 %d, IPv6 %d datagrams (%d fragments pending), want both", whole[false], whole[true], pending)
	}
}

// inNetns runs fn on a thread inside the namespace; sockets created by fn
// stay in it afterwards.
func inNetns(t *testing.T, name string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	var failed error
	go func() {
		defer close(done)
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			failed = err
			runtime.UnlockOSThread()
			return
		}
		defer unix.Close(orig)
		target, err := unix.Open("/run/netns/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			failed = err
			runtime.UnlockOSThread()
			return
		}
		defer unix.Close(target)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			failed = err
			runtime.UnlockOSThread()
			return
		}
		fn()
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			failed = err
			return // the thread stays locked and dies with the goroutine
		}
		runtime.UnlockOSThread()
	}()
	<-done
	if failed != nil {
		t.Fatalf("netns %s: %v", name, failed)
	}
}

// drain reads packets until the source is idle for its read timeout.
func drain(t *testing.T, src Source) []decap.Packet {
	t.Helper()
	d := decap.NewDecoder(decap.Config{})
	var out []decap.Packet
	var p Packet
	last := 0
	for {
		err := src.ReadPacket(&p)
		if errors.Is(err, ErrTimeout) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if p.Frame != last+1 || len(p.Data) != p.CaptureLength || p.Time.IsZero() {
			t.Fatalf("packet frame %d after %d, %d/%d bytes, time %v", p.Frame, last, len(p.Data), p.CaptureLength, p.Time)
		}
		last = p.Frame
		var dp decap.Packet
		if err := d.Decode(p.Data, p.LinkType, &dp); err != nil {
			if !errors.Is(err, decap.ErrNotTransport) {
				t.Errorf("frame %d (%d bytes): %v", p.Frame, len(p.Data), err)
			}
			continue
		}
		dp.Payload = append([]byte(nil), dp.Payload...)
		out = append(out, dp)
	}
}

func TestLiveCapture(t *testing.T) {
	ns := netns(t)
	var (
		src, any  *LiveSource
		udp, udp6 net.Conn
		tcp       net.Conn
		ln        net.Listener
		err       error
	)
	inNetns(t, ns, func() {
		if src, err = OpenLive(LiveConfig{Interface: "lo", ReadTimeout: 300 * time.Millisecond}); err != nil {
			return
		}
		if any, err = OpenLive(LiveConfig{ReadTimeout: 300 * time.Millisecond}); err != nil {
			return
		}
		var pc net.PacketConn
		if pc, err = net.ListenPacket("udp4", "127.0.0.1:0"); err != nil {
			return
		}
		t.Cleanup(func() { pc.Close() })
		if udp, err = net.Dial("udp4", pc.LocalAddr().String()); err != nil {
			return
		}
		var pc6 net.PacketConn
		if pc6, err = net.ListenPacket("udp6", "[::1]:0"); err != nil {
			return
		}
		t.Cleanup(func() { pc6.Close() })
		if udp6, err = net.Dial("udp6", pc6.LocalAddr().String()); err != nil {
			return
		}
		if ln, err = net.Listen("tcp4", "127.0.0.1:0"); err != nil {
			return
		}
		tcp, err = net.Dial("tcp4", ln.Addr().String())
	})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	defer any.Close()
	defer ln.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		c   net.Conn
		msg string
	}{{udp, "hello-udp"}, {udp6, "hello-udp6"}, {tcp, "hello-tcp"}} {
		if _, err := w.c.Write([]byte(w.msg)); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 64)
	if _, err := io.ReadAtLeast(server, buf, len("hello-tcp")); err != nil {
		t.Fatal(err)
	}
	// A bulk write: lo's 64 KiB MTU and TSO give frames near or above 64 KiB,
	// which must arrive whole (the default snaplen) and be decoded.
	bulk := make([]byte, 300_000)
	go tcp.Write(bulk)
	if _, err := io.ReadFull(server, make([]byte, len(bulk))); err != nil {
		t.Fatal(err)
	}
	server.Write([]byte("reply")) // acked by a pure ACK the filter drops
	io.ReadAtLeast(tcp, buf, 5)
	tcp.Close()
	server.Close()

	got := drain(t, src)
	seen := map[string]bool{}
	var syn, fin bool
	var bulkSegs [][2]uint32 // seq, length; retransmissions overlap
	biggest := 0
	for _, p := range got {
		if p.Proto == 6 && len(p.Payload) > 0 && p.Payload[0] == 0 {
			bulkSegs = append(bulkSegs, [2]uint32{p.Seq, uint32(len(p.Payload))})
			biggest = max(biggest, len(p.Payload))
			continue
		}
		if p.Proto == 17 && seen[string(p.Payload)] { // TCP may retransmit
			t.Errorf("%q captured twice: the outgoing copy on lo passed", p.Payload)
		}
		seen[string(p.Payload)] = true
		syn = syn || p.TCPFlags&decap.TCPSyn != 0
		fin = fin || p.TCPFlags&decap.TCPFin != 0
		if p.Proto == 6 && len(p.Payload) == 0 && p.TCPFlags&(decap.TCPSyn|decap.TCPFin|decap.TCPRst) == 0 {
			t.Errorf("the default filter passed a pure ACK: %+v", p)
		}
	}
	for _, want := range []string{"hello-udp", "hello-udp6", "hello-tcp", "reply"} {
		if !seen[want] {
			t.Errorf("%q not captured on lo (got %d packets)", want, len(got))
		}
	}
	if bulkBytes := covered(bulkSegs); bulkBytes != len(bulk) {
		t.Errorf("bulk write: %d payload bytes captured, want %d", bulkBytes, len(bulk))
	}
	t.Logf("largest segment captured: %d bytes", biggest)
	if !syn || !fin {
		t.Errorf("SYN captured %v, FIN captured %v", syn, fin)
	}
	received, dropped, err := src.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if received < uint64(len(got)) || dropped > received {
		t.Errorf("stats received %d dropped %d, after reading %d packets", received, dropped, len(got))
	}
	t.Logf("lo: %d packets decoded, kernel received %d dropped %d", len(got), received, dropped)

	anySeen := 0
	for _, p := range drain(t, any) {
		if string(p.Payload) == "hello-udp" {
			anySeen++
		}
	}
	if anySeen != 1 {
		t.Errorf(`"hello-udp" captured %d times on any, want once`, anySeen)
	}
}

// TestLiveFanout checks that two sources in one fanout group split the
// traffic: every datagram is captured by exactly one of them.
func TestLiveFanout(t *testing.T) {
	ns := netns(t)
	var srcs [2]*LiveSource
	var conns []net.Conn
	var err error
	group := uint16(os.Getpid()%60000 + 1)
	inNetns(t, ns, func() {
		for i := range srcs {
			if srcs[i], err = OpenLive(LiveConfig{Interface: "lo", FanoutGroup: group, ReadTimeout: 300 * time.Millisecond}); err != nil {
				return
			}
		}
		var pc net.PacketConn
		if pc, err = net.ListenPacket("udp4", "127.0.0.1:0"); err != nil {
			return
		}
		t.Cleanup(func() { pc.Close() })
		for range 32 {
			var c net.Conn
			if c, err = net.Dial("udp4", pc.LocalAddr().String()); err != nil {
				return
			}
			conns = append(conns, c)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range srcs {
		defer s.Close()
	}
	for i, c := range conns {
		if _, err := fmt.Fprintf(c, "flow-%d", i); err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	count := map[string]int{}
	per := [2]int{}
	for i, s := range srcs {
		for _, p := range drain(t, s) {
			if strings.HasPrefix(string(p.Payload), "flow-") {
				count[string(p.Payload)]++
				per[i]++
			}
		}
	}
	for i := range conns {
		if n := count[fmt.Sprintf("flow-%d", i)]; n != 1 {
			t.Errorf("flow-%d captured %d times, want once across the group", i, n)
		}
	}
	t.Logf("per source %v", per)
	if per[0] == 0 || per[1] == 0 {
		t.Errorf("fanout split %v: one source got nothing from 32 flows", per)
	}
}

// TestLiveClose unblocks a ReadPacket waiting on an idle interface.
func TestLiveClose(t *testing.T) {
	ns := netns(t)
	var src *LiveSource
	var err error
	inNetns(t, ns, func() { src, err = OpenLive(LiveConfig{Interface: "lo"}) })
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		var p Packet
		done <- src.ReadPacket(&p)
	}()
	testwait.Until(t, 10*time.Second, "ReadPacket to wait for a packet", func() bool {
		return testwait.Blocked("capture.(*LiveSource).ReadPacket")
	})
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("ReadPacket after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("ReadPacket still blocked 2 s after Close")
	}
	if err := src.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, _, err := src.Stats(); err != nil {
		t.Errorf("Stats after Close: %v", err)
	}
}

func TestOpenLiveConfig(t *testing.T) {
	for _, c := range []struct {
		cfg  LiveConfig
		want string
	}{
		{LiveConfig{SnapLen: 10}, "snaplen"},
		{LiveConfig{BlockSize: 1000}, "block size"},
		{LiveConfig{BlockSize: 4096}, "block size"},
		{LiveConfig{BlockSize: 1 << 17}, "block size"}, // smaller than the default snaplen
		{LiveConfig{NumBlocks: -1}, "blocks"},
		{LiveConfig{ReadTimeout: -1}, "timeout"},
		{LiveConfig{Interface: "no-such-if0"}, "no-such-if0"},
	} {
		if _, err := OpenLive(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("OpenLive(%+v): %v, want an error about %s", c.cfg, err, c.want)
		}
	}
}

// covered counts the sequence space the segments cover, once.
func covered(segs [][2]uint32) int {
	if len(segs) == 0 {
		return 0
	}
	base := segs[0][0]
	for _, s := range segs {
		if int32(s[0]-base) < 0 {
			base = s[0]
		}
	}
	type span struct{ lo, hi int64 }
	var spans []span
	for _, s := range segs {
		lo := int64(s[0] - base)
		spans = append(spans, span{lo, lo + int64(s[1])})
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	n, end := int64(0), int64(-1)
	for _, s := range spans {
		if s.lo > end {
			n += s.hi - s.lo
			end = s.hi
		} else if s.hi > end {
			n += s.hi - end
			end = s.hi
		}
	}
	return int(n)
}

// TestFanoutDescriptor guards setFanout's reach into gopacket: if the fd
// field goes, fanout falls back to gopacket's call, which kernels before
// 5.13 reject.
func TestFanoutDescriptor(t *testing.T) {
	f := reflect.ValueOf(&afpacket.TPacket{}).Elem().FieldByName("fd")
	if !f.IsValid() || f.Kind() != reflect.Int {
		t.Fatal("afpacket.TPacket has no int fd field any more; see setFanout")
	}
}

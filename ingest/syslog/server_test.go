package syslog

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/guardd/guardd/testwait"
	"github.com/prometheus/client_golang/prometheus"
)

// lineWriter is a Writer that keeps the lines; while gate is set, it waits
// on it before taking each line (a consumer stopped on purpose).
type lineWriter struct {
	mu    sync.Mutex
	lines []string // "file|host|line"
	marks int
	gate  chan struct{}
}

func (w *lineWriter) LineFrom(data []byte, file string, line int64, host string) error {
	if w.gate != nil {
		<-w.gate
	}
	w.mu.Lock()
	w.lines = append(w.lines, fmt.Sprintf("%s|%s|%s", strings.SplitN(file, ":", 2)[0], host, data))
	w.mu.Unlock()
	return nil
}

func (w *lineWriter) Mark(any) error {
	w.mu.Lock()
	w.marks++
	w.mu.Unlock()
	return nil
}

func (w *lineWriter) snapshot() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.lines)
}

func mustAddr(t *testing.T, s string) Addr {
	t.Helper()
	a, err := ParseAddr(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// start runs a Server on cfg until the test ends.
func start(t *testing.T, cfg Config, w Writer) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, w) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return s
}

// TestServer sends over each kind of socket, through the kernel: nginx's
// RFC 3164 over a Unix datagram socket and UDP, RFC 5424 with octet
// counting from logger(1) over TCP and LF framing from a client of our
// own; every message arrives once with its host, the malformed ones are
// counted, and stopping removes the socket file.
func TestServer(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "nginx.sock")
	w := &lineWriter{}
	ctx, cancel := context.WithCancel(context.Background())
	s, err := New(Config{Listen: []Addr{mustAddr(t, "unixgram:"+sock), mustAddr(t, "udp:127.0.0.1:0"), mustAddr(t, "tcp:127.0.0.1:0")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, w) }()
	addrs := s.Addrs()
	udpAddr, tcpAddr := addrs[1].(*net.UDPAddr), addrs[2].(*net.TCPAddr)

	ux, err := net.Dial("unixgram", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ux.Close()
	udp, err := net.DialUDP("udp", nil, udpAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	var want []string
	for i := range 50 {
		fmt.Fprintf(ux, "<190>Nov 28 04:00:00 web-1 nginx: unix %d", i)
		want = append(want, fmt.Sprintf("unixgram|web-1|unix %d", i))
		fmt.Fprintf(udp, "<190>Nov 28 04:00:00 nginx: udp %d", i) // nohostname: the peer's address
		want = append(want, fmt.Sprintf("udp|127.0.0.1|udp %d", i))
	}
	fmt.Fprint(ux, "not syslog")
	fmt.Fprint(udp, "<999>garbage")

	// logger(1) over TCP, RFC 5424 with octet counting.
	if _, err := exec.LookPath("logger"); err == nil {
		args := []string{"--tcp", "--octet-count", "--rfc5424", "-n", "127.0.0.1", "-P", fmt.Sprint(tcpAddr.Port), "-t", "nginx"}
		var in strings.Builder
		for i := range 20 {
			fmt.Fprintf(&in, "logger %d\n", i)
			want = append(want, fmt.Sprintf("tcp|%s|logger %d", hostname(t), i))
		}
		cmd := exec.Command("logger", append(args, "-f", "/dev/stdin")...)
		cmd.Stdin = strings.NewReader(in.String())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("logger: %v %s", err, out)
		}
	} else {
		t.Log("logger(1) not installed: TCP tested with our own client only")
	}
	// Our own client, LF framing, with one malformed frame among them.
	tc, err := net.Dial("tcp", tcpAddr.String())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		fmt.Fprintf(tc, "<190>Nov 28 04:00:00 web-9 nginx: tcp %d\n", i)
		want = append(want, fmt.Sprintf("tcp|web-9|tcp %d", i))
		if i == 10 {
			fmt.Fprint(tc, "<190>nonsense\n")
		}
	}
	tc.Close()

	testwait.Until(t, 20*time.Second, "every message", func() bool { return len(w.snapshot()) >= len(want) })
	testwait.Until(t, 20*time.Second, "the malformed ones counted", func() bool {
		return s.Stats(Unixgram).Malformed == 1 && s.Stats(UDP).Malformed == 1 && s.Stats(TCP).Malformed == 1
	})
	got := w.snapshot()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if st := s.Stats(UDP); st.Messages != 50 || st.Dropped != 0 {
		t.Errorf("udp stats %+v", st)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket file left behind: %v", err)
	}
}

func hostname(t *testing.T) string {
	h, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestDroppedDatagrams: with the consumer stopped on purpose, datagrams
// that the socket buffer cannot hold are dropped by the kernel and counted
// from its own count; once the consumer goes on, every datagram sent was
// either read or counted as dropped.
func TestDroppedDatagrams(t *testing.T) {
	w := &lineWriter{gate: make(chan struct{})}
	reg := prometheus.NewRegistry()
	s := start(t, Config{Listen: []Addr{mustAddr(t, "udp:127.0.0.1:0")}, ReadBuffer: 4096, QueueBytes: 1024, MaxMessage: 512, Registerer: reg}, w)
	metric := func() float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "guardd_syslog_dropped_datagrams_total" {
				return mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
		t.Fatal("no guardd_syslog_dropped_datagrams_total")
		return 0
	}
	c, err := net.DialUDP("udp", nil, s.Addrs()[0].(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const sent = 2000
	for i := range sent {
		fmt.Fprintf(c, "<190>Nov 28 04:00:00 web-1 nginx: line %d", i)
	}
	testwait.Until(t, 20*time.Second, "drops in the metric while the reader is stopped", func() bool { return metric() > 0 })
	stopped := s.Stats(UDP)
	close(w.gate)
	testwait.Until(t, 20*time.Second, "every datagram read or counted as dropped", func() bool {
		st := s.Stats(UDP)
		return st.Messages+st.Dropped == sent && int64(len(w.snapshot())) == st.Messages
	})
	st := s.Stats(UDP)
	if m := metric(); m != float64(st.Dropped) {
		t.Errorf("metric %v, stats %d", m, st.Dropped)
	}
	t.Logf("stopped: %+v; in the end %d read, %d dropped", stopped, st.Messages, st.Dropped)
}

func TestParseAddr(t *testing.T) {
	for _, tt := range []struct{ in, want, err string }{
		{"unixgram:/run/guardd/nginx.sock", "unixgram:/run/guardd/nginx.sock", ""},
		{"udp:127.0.0.1:5514", "udp:127.0.0.1:5514", ""},
		{"tcp:[::1]:5514", "tcp:[::1]:5514", ""},
		{"udp:127.0.0.1:0", "udp:127.0.0.1:0", ""},
		{"unix:/run/x.sock", "", `unknown network "unix"`},
		{"unixgram:relative.sock", "", "absolute socket path"},
		{"udp:localhost:5514", "", "literal IP address"},
		{"tcp:127.0.0.1", "", "literal IP address"},
		{"127.0.0.1:5514", "", `unknown network "127.0.0.1"`},
		{"nothing", "", "want"},
	} {
		a, err := ParseAddr(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: err %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || a.String() != tt.want {
			t.Errorf("%s: %v %v", tt.in, a, err)
		}
	}
}

// TestPutAllocs: parsing a message and queueing it costs no allocation
// once the queue's buffers have grown, and neither does handing a batch
// over.
func TestPutAllocs(t *testing.T) {
	s, err := New(Config{Listen: []Addr{mustAddr(t, "udp:127.0.0.1:0")}})
	if err != nil {
		t.Fatal(err)
	}
	l := s.listeners[0]
	msg := []byte("<190>Nov 28 04:00:00 web-1 nginx: " + accessLine)
	peer := netip.MustParseAddr("127.0.0.1")
	var m Message
	var spare queued
	round := func() {
		for range 100 {
			s.put(l, msg, peer, &m)
		}
		b, _ := s.q.take(&spare)
		spare = b
	}
	round()
	round()
	if n := testing.AllocsPerRun(50, round); n != 0 {
		t.Fatalf("%v allocations per 100 messages", n)
	}
	// Two rounds, AllocsPerRun's warm-up and its 50.
	if st := s.Stats(UDP); st.Messages != 53*100 {
		t.Fatalf("stats %+v", st)
	}
}

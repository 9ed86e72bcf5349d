//go:build linux

package http1

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/guardd/guardd/testwait"
	"golang.org/x/sys/unix"
)

// echo answers with the method, path and one header, and fails on demand.
var echo = HandlerFunc(func(w *Response, r *Request) {
	switch r.Path() {
	case "/panic":
		panic("test panic")
	case "/big":
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write([]byte(strings.Repeat("x", 4<<20)))
		return
	case "/empty":
		w.SetStatus(http.StatusNoContent)
		return
	}
	w.AddHeader("X-Method", []byte(r.Method))
	w.Header().Set("X-Test", r.Get("x-test"))
	w.Write([]byte(r.Path()))
})

func startServer(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	if cfg.Handler == nil {
		cfg.Handler = echo
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		ln.Close()
		if n := s.Stats().Conns; n != 0 {
			t.Errorf("%d connections open after Serve returned", n)
		}
	})
	return s, ln.Addr().String()
}

func TestServeKeepAlive(t *testing.T) {
	_, addr := startServer(t, Config{Loops: 2})
	tr := &http.Transport{MaxIdleConnsPerHost: 4}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	for i := range 200 {
		req, _ := http.NewRequest("GET", "http://"+addr+"/a/b?c=d", nil)
		req.Header.Set("X-Test", "v")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "/a/b" || resp.Header.Get("X-Method") != "GET" ||
			resp.Header.Get("X-Test") != "v" || resp.Header.Get("Date") == "" {
			t.Fatalf("request %d: %d %q %v", i, resp.StatusCode, body, resp.Header)
		}
	}
	// HEAD: the length the GET would have, no body.
	resp, err := client.Head("http://" + addr + "/abc")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ContentLength != 4 {
		t.Errorf("HEAD: %d length %d", resp.StatusCode, resp.ContentLength)
	}
}

// raw sends b on a new connection and returns everything read until the
// server closes it or goes quiet for 300ms.
func raw(t *testing.T, addr string, parts ...string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, p := range parts {
		if _, err := c.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
		// The thing under test: each part arrives on its own, so the
		// server sees a head split across reads (no signal says when a
		// segment has been read, and none is needed for correctness).
		time.Sleep(5 * time.Millisecond)
	}
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	b, _ := io.ReadAll(c)
	return string(b)
}

func TestServeRaw(t *testing.T) {
	_, addr := startServer(t, Config{MaxHeadBytes: 512})
	tests := []struct {
		name  string
		parts []string
		want  []string // substrings, in order
		not   []string
	}{
		{name: "pipelined", parts: []string{"GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\nGET /3 HTTP/1.1\r\nHost: a\r\n\r\n"},
			want: []string{"HTTP/1.1 200 OK\r\n", "\r\n\r\n/1", "\r\n\r\n/2", "\r\n\r\n/3"}},
		{name: "byte by byte", parts: strings.Split("GET /slow HTTP/1.1\r\nHost: a\r\n\r\n", ""),
			want: []string{"HTTP/1.1 200 OK\r\n", "/slow"}},
		{name: "body discarded", parts: []string{"POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n01234", "56789GET /after HTTP/1.1\r\nHost: a\r\n\r\n"},
			want: []string{"\r\n\r\n/p", "\r\n\r\n/after"}},
		{name: "bad head closes", parts: []string{"GET / HTTP/1.1\r\nHost : a\r\n\r\nGET /never HTTP/1.1\r\nHost: a\r\n\r\n"},
			want: []string{"HTTP/1.1 400 Bad Request\r\n", "Connection: close\r\n"}, not: []string{"/never"}},
		{name: "too large", parts: []string{"GET / HTTP/1.1\r\nHost: a\r\nX: " + strings.Repeat("y", 600) + "\r\n\r\n"},
			want: []string{"HTTP/1.1 431 Request Header Fields Too Large\r\n"}},
		{name: "chunked", parts: []string{"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
			want: []string{"HTTP/1.1 501 Not Implemented\r\n"}},
		{name: "HTTP/2 preface", parts: []string{"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"}, want: []string{"HTTP/1.1 505 "}},
		{name: "1.0 closes", parts: []string{"GET /x HTTP/1.0\r\n\r\nGET /never HTTP/1.0\r\n\r\n"},
			want: []string{"HTTP/1.1 200 OK\r\n", "Connection: close\r\n", "/x"}, not: []string{"/never"}},
		{name: "1.0 keep-alive", parts: []string{"GET /x HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /y HTTP/1.0\r\n\r\n"},
			want: []string{"Connection: keep-alive\r\n", "/x", "Connection: close\r\n", "/y"}},
		{name: "connection close", parts: []string{"GET /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\nGET /never HTTP/1.1\r\nHost: a\r\n\r\n"},
			want: []string{"Connection: close\r\n", "/x"}, not: []string{"/never"}},
		{name: "204 has no length", parts: []string{"GET /empty HTTP/1.1\r\nHost: a\r\n\r\n"},
			want: []string{"HTTP/1.1 204 No Content\r\n"}, not: []string{"Content-Length"}},
		{name: "panic is 500 and closes", parts: []string{"GET /panic HTTP/1.1\r\nHost: a\r\n\r\nGET /never HTTP/1.1\r\nHost: a\r\n\r\n"},
			want: []string{"HTTP/1.1 500 Internal Server Error\r\n"}, not: []string{"/never"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := raw(t, addr, tt.parts...)
			rest := got
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("missing %q in order in:\n%s", w, got)
				}
				rest = rest[i+len(w):]
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("unexpected %q in:\n%s", n, got)
				}
			}
		})
	}
}

// A client that does not read: answers queue, the loop keeps serving
// others, and the answers arrive whole once the client reads.
func TestServeSlowReader(t *testing.T) {
	var big atomic.Int64 // answers to /big made: the loop has one it cannot send
	_, addr := startServer(t, Config{Handler: HandlerFunc(func(w *Response, r *Request) {
		if r.Path() == "/big" {
			big.Add(1)
		}
		echo(w, r)
	})})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 5
	for range n {
		c.Write([]byte("GET /big HTTP/1.1\r\nHost: a\r\n\r\n"))
	}
	// 4 MiB do not fit the socket's buffers: once the first is made the
	// loop holds an answer the client does not read.
	testwait.Until(t, 10*time.Second, "the loop to answer the first /big", func() bool { return big.Load() > 0 })
	// Another client is served meanwhile.
	other, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	other.SetDeadline(time.Now().Add(5 * time.Second))
	other.Write([]byte("GET /other HTTP/1.1\r\nHost: a\r\n\r\n"))
	if resp, err := http.ReadResponse(bufio.NewReader(other), nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("other client: %v", err)
	}
	br := bufio.NewReader(c)
	for i := range n {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil || len(b) != 4<<20 {
			t.Fatalf("answer %d: %d bytes, %v", i, len(b), err)
		}
	}
}

func TestServeLimits(t *testing.T) {
	s, addr := startServer(t, Config{MaxConns: 2, HeadTimeout: 100 * time.Millisecond, IdleTimeout: 300 * time.Millisecond})
	var conns []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	testwait.Until(t, 5*time.Second, "two connections open", func() bool { return s.Stats().Conns == 2 })
	// The third is closed at once.
	third, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	third.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := third.Read(make([]byte, 1)); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("third connection: %v, want closed", err)
	}
	testwait.Until(t, 5*time.Second, "the third connection to be rejected", func() bool { return s.Stats().Rejected == 1 })
	// A stalled head and an idle connection both time out (sweeps run
	// each second).
	conns[0].Write([]byte("GET / HTTP/1.1\r\nHost"))
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("connection %d: %v, want EOF", i, err)
		}
	}
	if st := s.Stats(); st.Timeouts != 2 || st.Conns != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestNewValidates(t *testing.T) {
	for _, cfg := range []Config{{}, {Handler: echo, Loops: -1}, {Handler: echo, Loops: 65}, {Handler: echo, HeadTimeout: -1}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

func TestServeRejectsNonSocket(t *testing.T) {
	s, _ := New(Config{Handler: echo})
	if err := s.Serve(context.Background(), fakeListener{}); err == nil {
		t.Error("Serve accepted a listener without a socket")
	}
}

type fakeListener struct{ net.Listener }

// BenchmarkProcess: one nginx auth request parsed, answered and written to
// the connection's buffer, as the loop does it.
func BenchmarkProcess(b *testing.B) {
	s, _ := New(Config{Handler: HandlerFunc(func(w *Response, r *Request) {
		if r.Get("x-real-ip") == "" {
			w.SetStatus(400)
			return
		}
		w.SetStatus(http.StatusNoContent)
	})})
	ss := &session{s: s}
	ss.tick(time.Now())
	c := &conn{}
	in := []byte(nginxHead)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		ss.process(c, in)
		c.out = c.out[:0]
	}
}

// A loop waiting in a raw epoll_wait keeps its P; a garbage collection must
// still get through at once (the preemption signal interrupts the wait),
// not after the wait's one-second timeout.
func TestServeDoesNotHoldUpGC(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("raw waits need GOMAXPROCS > 1")
	}
	s, _ := startServer(t, Config{})
	for range 3 {
		testwait.Until(t, 10*time.Second, "every loop to wait in a raw epoll_wait", func() bool { return rawWaits(t) == s.cfg.Loops })
		start := time.Now()
		runtime.GC()
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Fatalf("runtime.GC took %v with the loop waiting", d)
		}
	}
}

// rawWaits counts the threads of the process blocked in a loop's raw
// epoll_wait, from what the kernel shows of each thread's current system
// call: its number and arguments in hex, or "running". A loop asks for its
// 256 events with a timeout of 1000 ms; the runtime's netpoller asks for 128.
func rawWaits(t *testing.T) int {
	t.Helper()
	files, err := filepath.Glob("/proc/self/task/*/syscall")
	if err != nil || len(files) == 0 {
		t.Fatalf("no thread's system call to read: %v", err)
	}
	want := []string{strconv.Itoa(unix.SYS_EPOLL_PWAIT), "0x100", "0x3e8"}
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread has ended
		}
		if fs := strings.Fields(string(b)); len(fs) > 4 && fs[0] == want[0] && fs[3] == want[1] && fs[4] == want[2] {
			n++
		}
	}
	return n
}

// With GOMAXPROCS no larger than the loops, loops wait through the
// scheduler; serving works the same.
func TestServeOneProc(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	_, addr := startServer(t, Config{})
	got := raw(t, addr, "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	if !strings.Contains(got, "\r\n\r\n/1") || !strings.Contains(got, "\r\n\r\n/2") {
		t.Fatalf("answers: %q", got)
	}
}

package http1

import (
	"strings"
	"testing"
)

var testLimits = limits{maxHeadBytes: 1024, maxHeaders: 8}

// nginxHead is what nginx's auth_request location sends.
const nginxHead = "GET /v1/decide HTTP/1.1\r\nX-Real-IP: 203.0.113.7\r\nX-Real-Port: 51000\r\n" +
	"X-Original-Method: POST\r\nX-Original-URI: /login?next=%2F\r\nHost: guardd\r\n" +
	"User-Agent: curl/8.5.0\r\nCookie: session=abc; theme=dark\r\n\r\n"

func TestParseHead(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		status parseError
		n      int // 0: len(in) when status is 0 and want is complete
		method string
		target string
		host   string
		minor  int
		keep   bool
		length int64
		hdrs   []Header
	}{
		{name: "nginx", in: nginxHead, method: "GET", target: "/v1/decide", host: "guardd", minor: 1, keep: true,
			hdrs: []Header{{"x-real-ip", "203.0.113.7"}, {"x-real-port", "51000"}, {"x-original-method", "POST"},
				{"x-original-uri", "/login?next=%2F"}, {"host", "guardd"}, {"user-agent", "curl/8.5.0"}, {"cookie", "session=abc; theme=dark"}}},
		{name: "bare LF", in: "GET / HTTP/1.1\nHost: a\n\n", method: "GET", target: "/", host: "a", minor: 1, keep: true, hdrs: []Header{{"host", "a"}}},
		{name: "leading empty line", in: "\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", method: "GET", target: "/", host: "a", minor: 1, keep: true, hdrs: []Header{{"host", "a"}}},
		{name: "OWS trimmed", in: "GET / HTTP/1.1\r\nHost:\t a \t\r\nX-Empty:\r\n\r\n", method: "GET", target: "/", host: "a", minor: 1, keep: true,
			hdrs: []Header{{"host", "a"}, {"x-empty", ""}}},
		{name: "connection close", in: "GET / HTTP/1.1\r\nHost: a\r\nConnection: Keep-Alive, CLOSE\r\n\r\n", method: "GET", target: "/", host: "a", minor: 1,
			hdrs: []Header{{"host", "a"}, {"connection", "Keep-Alive, CLOSE"}}},
		{name: "1.0 closes", in: "GET / HTTP/1.0\r\n\r\n", method: "GET", target: "/", minor: 0},
		{name: "1.0 keep-alive", in: "HEAD /x HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", method: "HEAD", target: "/x", minor: 0, keep: true,
			hdrs: []Header{{"connection", "keep-alive"}}},
		{name: "content-length", in: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello", n: len("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n"),
			method: "POST", target: "/", host: "a", minor: 1, keep: true, length: 5, hdrs: []Header{{"host", "a"}, {"content-length", "5"}, {"content-length", "5"}}},
		{name: "incomplete", in: "GET / HTTP/1.1\r\nHost: a\r\n", status: 0, n: -1},
		{name: "incomplete request line", in: "GET / HTT", status: 0, n: -1},
		{name: "no host in 1.1", in: "GET / HTTP/1.1\r\n\r\n", status: 400},
		{name: "two hosts", in: "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", status: 400},
		{name: "space before colon", in: "GET / HTTP/1.1\r\nHost : a\r\n\r\n", status: 400},
		{name: "obs-fold", in: "GET / HTTP/1.1\r\nHost: a\r\n b\r\n\r\n", status: 400},
		{name: "no colon", in: "GET / HTTP/1.1\r\nHost\r\n\r\n", status: 400},
		{name: "CR in value", in: "GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", status: 400},
		{name: "NUL in value", in: "GET / HTTP/1.1\r\nHost: a\x00\r\n\r\n", status: 400},
		{name: "bad method", in: "G(T / HTTP/1.1\r\nHost: a\r\n\r\n", status: 400},
		{name: "two spaces", in: "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", status: 400},
		{name: "space in target", in: "GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", status: 400},
		{name: "HTTP/2.0", in: "GET / HTTP/2.0\r\nHost: a\r\n\r\n", status: 505},
		{name: "HTTP/1.2", in: "GET / HTTP/1.2\r\nHost: a\r\n\r\n", status: 505},
		{name: "bad version", in: "GET / HTTX/1.1\r\nHost: a\r\n\r\n", status: 400},
		{name: "bad length", in: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", status: 400},
		{name: "differing lengths", in: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", status: 400},
		{name: "chunked", in: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", status: 501},
		{name: "chunked and length", in: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", status: 400},
		{name: "too many headers", in: "GET / HTTP/1.1\r\nHost: a\r\n" + strings.Repeat("X: y\r\n", 8) + "\r\n", status: 431},
		{name: "head too long", in: "GET / HTTP/1.1\r\nHost: a\r\nX: " + strings.Repeat("y", 1100) + "\r\n\r\n", status: 431},
		{name: "incomplete and too long", in: "GET /" + strings.Repeat("y", 1100), status: 431},
		{name: "many empty lines", in: "\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", status: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req Request
			n, status := parseHead([]byte(tt.in), &req, testLimits)
			if status != tt.status {
				t.Fatalf("status %d, want %d", status, tt.status)
			}
			if status != 0 {
				return
			}
			want := tt.n
			switch want {
			case -1:
				want = 0
			case 0:
				want = len(tt.in)
			}
			if n != want {
				t.Fatalf("n = %d, want %d", n, want)
			}
			if n == 0 {
				return
			}
			if req.Method != tt.method || req.Target != tt.target || req.Host != tt.host || req.Minor != tt.minor ||
				req.keepAlive != tt.keep || req.contentLength != tt.length {
				t.Errorf("got %q %q host %q 1.%d keep %v length %d", req.Method, req.Target, req.Host, req.Minor, req.keepAlive, req.contentLength)
			}
			if len(req.Headers) != len(tt.hdrs) {
				t.Fatalf("headers %q, want %q", req.Headers, tt.hdrs)
			}
			for i := range tt.hdrs {
				if req.Headers[i] != tt.hdrs[i] {
					t.Errorf("header %d = %q, want %q", i, req.Headers[i], tt.hdrs[i])
				}
			}
		})
	}
}

func TestRequestGetAndPath(t *testing.T) {
	var req Request
	if _, st := parseHead([]byte(nginxHead), &req, testLimits); st != 0 {
		t.Fatal(st)
	}
	if got := req.Get("x-original-uri"); got != "/login?next=%2F" {
		t.Errorf("Get = %q", got)
	}
	if got := req.Get("x-missing"); got != "" {
		t.Errorf("Get missing = %q", got)
	}
	req.Target = "/v1/decide?x=1"
	if got := req.Path(); got != "/v1/decide" {
		t.Errorf("Path = %q", got)
	}
}

func TestParseHeadAllocs(t *testing.T) {
	b := []byte(nginxHead)
	var req Request
	parseHead(b, &req, testLimits)
	if n := testing.AllocsPerRun(100, func() { parseHead(b, &req, testLimits) }); n != 0 {
		t.Errorf("parseHead allocates %v times", n)
	}
}

func BenchmarkParseHead(b *testing.B) {
	buf := []byte(nginxHead)
	var req Request
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		parseHead(buf, &req, testLimits)
	}
}

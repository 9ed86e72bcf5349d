package http1

import (
	"bufio"
	"bytes"
	"net/http"
	"net/textproto"
	"strings"
	"testing"
)

// FuzzParseHead: no panic on any bytes, a sane length, and whatever we
// accept, net/http's parser accepts with the same method, target, version
// and headers (we may be stricter, never looser).
func FuzzParseHead(f *testing.F) {
	f.Add([]byte(nginxHead))
	f.Add([]byte("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /x HTTP/1.1\r\nHost: b\r\n\r\n"))
	f.Add([]byte("POST /v1/respond HTTP/1.1\nHost: a\nContent-Length: 3\n\nabc"))
	f.Add([]byte("GET http://guardd/v1/decide?x HTTP/1.1\r\nHost: guardd\r\nX-A:\t\xff\r\n\r\n"))
	f.Add([]byte("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 4096 {
			return
		}
		in := bytes.Clone(b)
		var req Request
		n, status := parseHead(in, &req, limits{maxHeadBytes: 2048, maxHeaders: 32})
		if n < 0 || n > len(b) {
			t.Fatalf("n = %d of %d bytes", n, len(b))
		}
		if status != 0 || n == 0 {
			return
		}
		head := bytes.TrimLeft(b[:n], "\r\n") // net/http does not skip leading empty lines
		hr, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
		if err != nil {
			t.Fatalf("we accept %q, net/http does not: %v", head, err)
		}
		if hr.Method != req.Method || hr.RequestURI != req.Target || hr.ProtoMinor != req.Minor {
			t.Fatalf("%q: net/http %q %q 1.%d, we %q %q 1.%d", head, hr.Method, hr.RequestURI, hr.ProtoMinor, req.Method, req.Target, req.Minor)
		}
		count := map[string]int{}
		for _, h := range req.Headers {
			key := textproto.CanonicalMIMEHeaderKey(h.Name)
			if key == "Host" {
				continue // net/http moves it to hr.Host
			}
			vs := hr.Header[key]
			if count[key] >= len(vs) || vs[count[key]] != h.Value {
				t.Fatalf("%q: header %q = %q, net/http has %q", head, h.Name, h.Value, vs)
			}
			count[key]++
		}
		if req.Host != "" && strings.HasPrefix(req.Target, "/") && hr.Host != req.Host {
			t.Fatalf("%q: host %q, net/http %q", head, req.Host, hr.Host)
		}
	})
}

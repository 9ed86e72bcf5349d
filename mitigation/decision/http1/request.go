package http1

import (
	"bytes"
	"net/url"
	"strings"
	"time"
	"unsafe"
)

// Header is one request header field. Name is lower-cased.
type Header struct {
	Name, Value string
}

// Request is one parsed request head. Its strings alias the loop's buffer
// and are valid only until the handler returns; copy what must outlive it.
type Request struct {
	Method string
	Target string // the request-target as sent: "/v1/decide?x=1"
	Host   string
	Minor  int // HTTP/1.Minor: 0 or 1
	// Headers in the order received, names lower-cased, values with
	// surrounding whitespace removed.
	Headers []Header
	// Received is when the loop read the bytes that completed this head:
	// time.Since(Received) is how long the request has waited in guardd.
	Received time.Time

	contentLength int64
	keepAlive     bool
}

// Get returns the first value of the header named name (lower case), or "".
func (r *Request) Get(name string) string {
	for i := range r.Headers {
		if r.Headers[i].Name == name {
			return r.Headers[i].Value
		}
	}
	return ""
}

// Path is the request-target's path: up to '?', and without the scheme
// and authority of an absolute-form target.
func (r *Request) Path() string {
	t := r.Target
	if len(t) > 0 && t[0] != '/' && t != "*" {
		if i := strings.Index(t, "://"); i >= 0 {
			t = t[i+3:]
			if j := strings.IndexAny(t, "/?"); j >= 0 {
				t = t[j:]
			} else {
				t = ""
			}
			if t == "" || t[0] == '?' {
				t = "/" + t
			}
		}
	}
	if i := strings.IndexByte(t, '?'); i >= 0 {
		return t[:i]
	}
	return t
}

func (r *Request) reset() {
	hs := r.Headers[:0]
	*r = Request{Headers: hs}
}

// parseError is the status a malformed head is answered with.
type parseError int

// limits bounds what parseHead accepts.
type limits struct {
	maxHeadBytes int
	maxHeaders   int
}

// parseHead parses one request head from the start of b into req. It
// returns the head's length, 0 when b does not yet hold a whole head, or a
// status to answer (400, 431, 501, 505) with the connection closed after.
// It lower-cases header names in b.
func parseHead(b []byte, req *Request, lim limits) (int, parseError) {
	req.reset()
	pos := 0
	// RFC 9112 2.2: ignore empty lines before the request-line.
	for pos < len(b) && (b[pos] == '\r' || b[pos] == '\n') {
		if pos >= 4 {
			return 0, 400
		}
		pos++
	}
	line, next, ok := nextLine(b, pos)
	if !ok {
		if len(b) > lim.maxHeadBytes {
			return 0, 431
		}
		return 0, 0
	}
	if status := parseRequestLine(line, req); status != 0 {
		return 0, status
	}
	pos = next
	var hosts, lengths int
	var te, connClose, connKeep bool
	for {
		line, next, ok = nextLine(b, pos)
		if !ok {
			if len(b) > lim.maxHeadBytes {
				return 0, 431
			}
			return 0, 0
		}
		if next > lim.maxHeadBytes {
			return 0, 431
		}
		pos = next
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			return 0, 400 // obs-fold: RFC 9112 5.2 lets a server reject it
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return 0, 400
		}
		name := line[:colon]
		for i, c := range name {
			if !isToken(c) {
				return 0, 400 // includes whitespace before the colon (RFC 9112 5.1)
			}
			if 'A' <= c && c <= 'Z' {
				name[i] = c + ('a' - 'A')
			}
		}
		value := trimOWS(line[colon+1:])
		for _, c := range value {
			if (c < 0x20 && c != '\t') || c == 0x7f {
				return 0, 400
			}
		}
		if len(req.Headers) >= lim.maxHeaders {
			return 0, 431
		}
		h := Header{Name: str(name), Value: str(value)}
		req.Headers = append(req.Headers, h)
		switch h.Name {
		case "host":
			hosts++
			req.Host = h.Value
		case "content-length":
			n, ok := parseLength(value)
			if !ok || (lengths > 0 && n != req.contentLength) {
				return 0, 400
			}
			lengths++
			req.contentLength = n
		case "transfer-encoding":
			te = true
		case "connection":
			c, k := connectionTokens(value)
			connClose = connClose || c
			connKeep = connKeep || k
		}
	}
	if hosts > 1 || (req.Minor == 1 && hosts == 0) {
		return 0, 400 // RFC 9112 3.2
	}
	if te {
		if lengths > 0 {
			return 0, 400 // RFC 9112 6.3: a request smuggling signal
		}
		return 0, 501
	}
	if req.Minor == 1 {
		req.keepAlive = !connClose
	} else {
		req.keepAlive = connKeep && !connClose
	}
	return pos, 0
}

// nextLine returns the line starting at pos without its line ending (CRLF
// or a bare LF, RFC 9112 2.2) and where the next line starts.
func nextLine(b []byte, pos int) (line []byte, next int, ok bool) {
	i := bytes.IndexByte(b[pos:], '\n')
	if i < 0 {
		return nil, 0, false
	}
	line = b[pos : pos+i]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, pos + i + 1, true
}

func parseRequestLine(line []byte, req *Request) parseError {
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 {
		return 400
	}
	method := line[:sp]
	for _, c := range method {
		if !isToken(c) {
			return 400
		}
	}
	rest := line[sp+1:]
	sp = bytes.IndexByte(rest, ' ')
	if sp <= 0 {
		return 400
	}
	target, version := rest[:sp], rest[sp+1:]
	for _, c := range target {
		if c <= ' ' || c == 0x7f {
			return 400
		}
	}
	if !validTarget(target) {
		return 400
	}
	if len(version) != 8 || string(version[:5]) != "HTTP/" || version[6] != '.' ||
		!isDigit(version[5]) || !isDigit(version[7]) {
		return 400
	}
	if version[5] != '1' || version[7] > '1' {
		return 505
	}
	req.Method, req.Target, req.Minor = str(method), str(target), int(version[7]-'0')
	return 0
}

// validTarget accepts the origin form ("/path?query") with well-formed
// percent escapes in the path, "*", and the absolute form, which RFC 9112
// 3.2.2 says a server must accept. The authority form (CONNECT) is refused.
func validTarget(t []byte) bool {
	switch {
	case t[0] == '/':
		return validEscapes(t)
	case len(t) == 1 && t[0] == '*':
		return true
	}
	u, err := url.ParseRequestURI(string(t)) // rare: allocating is fine
	return err == nil && u.Scheme != "" && u.Host != ""
}

// validEscapes reports whether every '%' in the path part of an origin-form
// target starts an escape of two hex digits.
func validEscapes(t []byte) bool {
	for i := 0; i < len(t) && t[i] != '?'; i++ {
		if t[i] == '%' {
			if i+2 >= len(t) || !isHex(t[i+1]) || !isHex(t[i+2]) {
				return false
			}
		}
	}
	return true
}

func isHex(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

// parseLength reads a Content-Length: digits only, at most 18 of them.
func parseLength(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// connectionTokens reports whether a Connection value lists close or
// keep-alive (case-insensitive, comma-separated).
func connectionTokens(v []byte) (closeTok, keepAlive bool) {
	for len(v) > 0 {
		var tok []byte
		if i := bytes.IndexByte(v, ','); i >= 0 {
			tok, v = v[:i], v[i+1:]
		} else {
			tok, v = v, nil
		}
		tok = trimOWS(tok)
		switch {
		case bytes.EqualFold(tok, []byte("close")):
			closeTok = true
		case bytes.EqualFold(tok, []byte("keep-alive")):
			keepAlive = true
		}
	}
	return closeTok, keepAlive
}

// trimOWS removes optional whitespace (RFC 9110 5.6.3) from both ends.
func trimOWS(b []byte) []byte { return bytes.Trim(b, " \t") }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isToken reports whether c is a tchar of RFC 9110 5.6.2.
func isToken(c byte) bool {
	return c < 0x80 && tokenTable[c]
}

var tokenTable = func() (t [128]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// str aliases b as a string without copying. The caller guarantees b is
// not modified while the string is in use.
func str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

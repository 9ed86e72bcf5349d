package characteristics

import (
	"strings"
	"unicode/utf8"
	"unsafe"
)

// Anomaly is a set of oddities the normaliser found in a request's path: the
// ways attackers hide a traversal or a probe from rules that match raw text.
// Its names (AnomalyNames) are a closed set, safe as metric labels.
type Anomaly uint16

// Anomalies of a request path.
const (
	AnomalyDoubleEncoded Anomaly = 1 << iota // still percent-encoded after one decoding (%252e, %%32%65)
	AnomalyBadEscape                         // '%' not followed by two hex digits
	AnomalyInvalidUTF8                       // bytes that are not UTF-8 once decoded
	AnomalyOverlongUTF8                      // an overlong UTF-8 form (%c0%ae for '.')
	AnomalyNullByte                          // a NUL byte once decoded
	AnomalyBackslash                         // a backslash, read as '/'
	AnomalyPathParam                         // a ';' parameter in a segment (..;/, ;jsessionid=)
	AnomalyRepeatedSlash                     // an empty segment (//)
	AnomalyDotSegment                        // a "." or ".." segment
	AnomalyTraversal                         // a ".." segment
	AnomalyEscapesRoot                       // a ".." segment above the root
	anomalyEnd
)

var anomalyNames = [...]string{
	"double_encoded", "bad_escape", "invalid_utf8", "overlong_utf8", "null_byte",
	"backslash", "path_param", "repeated_slash", "dot_segment", "traversal", "escapes_root",
}

// AnomalyNames lists the names of the anomalies, in bit order: the keys of
// http.anomalies.
func AnomalyNames() []string { return anomalyNames[:] }

// anomalyByName returns the anomaly named s, or 0.
func anomalyByName(s string) Anomaly {
	for i, n := range anomalyNames {
		if n == s {
			return 1 << i
		}
	}
	return 0
}

// Has reports whether every anomaly of b is in a.
func (a Anomaly) Has(b Anomaly) bool { return a&b == b && b != 0 }

// normalized holds the normalised forms of an event's request, computed once
// on first use. Event.Reset invalidates them; so does a change of the field
// they were made from. A form equal to its field is not stored (plain): the
// accessor returns the field itself, so nothing aliases a buffer the event
// no longer owns.
type normalized struct {
	done                            bool
	srcPath, srcQuery, srcUA, srcRf string // the values the forms were made from
	path, query, ua, ref            string // valid when the field is not plain
	plain                           uint8  // bit 0 path, 1 query, 2 user agent, 3 referer
	anomalies                       Anomaly
	decA, decB, fix, pathBuf        []byte // the path's decoding rounds, fix-up and resolution
	queryBuf, uaBuf, refBuf         []byte
	argBuf                          []byte // decoded argument values of this event
}

const (
	plainPath = 1 << iota
	plainQuery
	plainUA
	plainRef
)

// maxDecodes bounds the rounds of percent-decoding of a path: an attacker's
// third encoding is as suspicious as the second, and more rounds only cost.
const maxDecodes = 3

// norm returns e's normalised forms, computing them when e changed since.
func (e *Event) norm() *normalized {
	n := &e.nrm
	if n.done && same(n.srcPath, e.Path) && same(n.srcQuery, e.Query) && same(n.srcUA, e.UserAgent) && same(n.srcRf, e.Referer) {
		return n
	}
	n.done = true
	n.plain = 0
	n.argBuf = n.argBuf[:0]
	n.srcPath, n.srcQuery, n.srcUA, n.srcRf = e.Path, e.Query, e.UserAgent, e.Referer
	if isPlainPath(e.Path) {
		n.plain |= plainPath
		n.anomalies = 0
	} else {
		n.path, n.anomalies = normalizePath(e.Path, n)
	}
	if needsDecode(e.Query, true) {
		n.query, n.queryBuf = decodeField(e.Query, n.queryBuf, true)
	} else {
		n.plain |= plainQuery
	}
	if needsDecode(e.UserAgent, false) {
		n.ua, n.uaBuf = decodeField(e.UserAgent, n.uaBuf, false)
	} else {
		n.plain |= plainUA
	}
	if needsDecode(e.Referer, false) {
		n.ref, n.refBuf = decodeField(e.Referer, n.refBuf, false)
	} else {
		n.plain |= plainRef
	}
	return n
}

// same reports whether a and b are equal, without reading them when they
// are the same bytes (the common case: the field the form was made from).
func same(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

func (n *normalized) reset() {
	n.done = false
	n.srcPath, n.srcQuery, n.srcUA, n.srcRf = "", "", "", ""
	n.path, n.query, n.ua, n.ref = "", "", "", ""
}

// NormPath returns http.norm.path: the path percent-decoded (repeatedly, up
// to three rounds), overlong UTF-8 forms of ASCII read as that ASCII,
// backslashes read as '/', ';' parameters dropped from each segment, and
// empty, "." and ".." segments resolved. A path that does not start with '/'
// (an absolute URI, "*", a CONNECT authority) is decoded but not resolved.
func (e *Event) NormPath() string {
	if n := e.norm(); n.plain&plainPath == 0 {
		return n.path
	}
	return e.Path
}

// NormQuery returns http.norm.query: the query percent-decoded, '+' read as a
// space, and decoded once more when the result is still encoded.
func (e *Event) NormQuery() string {
	if n := e.norm(); n.plain&plainQuery == 0 {
		return n.query
	}
	return e.Query
}

// NormUserAgent returns http.norm.user_agent: the user agent percent-decoded.
func (e *Event) NormUserAgent() string {
	if n := e.norm(); n.plain&plainUA == 0 {
		return n.ua
	}
	return e.UserAgent
}

// NormReferer returns http.norm.referer: the referer percent-decoded.
func (e *Event) NormReferer() string {
	if n := e.norm(); n.plain&plainRef == 0 {
		return n.ref
	}
	return e.Referer
}

// Anomalies returns the anomalies found while normalising the path.
func (e *Event) Anomalies() Anomaly { return e.norm().anomalies }

// Arg returns http.args[name]: the value of the first query argument called
// name (compared after decoding), decoded, and whether there is one. An
// argument without '=' has the empty value.
func (e *Event) Arg(name string) (string, bool) {
	n := e.norm()
	q := e.Query
	for q != "" {
		part := q
		if i := strings.IndexByte(q, '&'); i >= 0 {
			part, q = q[:i], q[i+1:]
		} else {
			q = ""
		}
		k, v, _ := strings.Cut(part, "=")
		if !argNameIs(k, name) {
			continue
		}
		if !needsDecode(v, true) {
			return v, true
		}
		start := len(n.argBuf)
		if cap(n.argBuf)-start < len(v) {
			// A new array: the values returned before keep the old one.
			nb := make([]byte, start, 2*cap(n.argBuf)+len(v))
			copy(nb, n.argBuf)
			n.argBuf = nb
		}
		n.argBuf = appendDecoded(n.argBuf, v, true, nil)
		b := n.argBuf[start:]
		return unsafe.String(unsafe.SliceData(b), len(b)), true
	}
	return "", false
}

// argNameIs reports whether the raw argument name k decodes to name.
func argNameIs(k, name string) bool {
	if !needsDecode(k, true) {
		return k == name
	}
	var buf [128]byte
	if len(k) > len(buf) {
		return false
	}
	d := appendDecoded(buf[:0], k, true, nil)
	return string(d) == name
}

// needsDecode reports whether s has a percent escape (or a '+' in a query).
func needsDecode(s string, plus bool) bool {
	return strings.IndexByte(s, '%') >= 0 || plus && strings.IndexByte(s, '+') >= 0
}

// decodeField percent-decodes s into buf (twice when still encoded) and
// returns it, or s itself when it holds nothing to decode.
func decodeField(s string, buf []byte, plus bool) (string, []byte) {
	if !needsDecode(s, plus) {
		return s, buf
	}
	buf = appendDecoded(buf[:0], s, plus, nil)
	if hasEscape(buf) {
		var tmp [512]byte
		if len(buf) <= len(tmp) {
			t := append(tmp[:0], buf...)
			buf = appendDecoded(buf[:0], unsafe.String(unsafe.SliceData(t), len(t)), false, nil)
		}
	}
	return unsafe.String(unsafe.SliceData(buf), len(buf)), buf
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// escapeAt reports whether s[i:] starts with %XX, and its byte.
func escapeAt(s string, i int) (byte, bool) {
	if i+2 >= len(s) || s[i] != '%' {
		return 0, false
	}
	h, ok1 := unhex(s[i+1])
	l, ok2 := unhex(s[i+2])
	return h<<4 | l, ok1 && ok2
}

// uEscapeAt reports whether s[i:] starts with IIS's %uXXXX, and its rune.
func uEscapeAt(s string, i int) (rune, bool) {
	if i+5 >= len(s) || s[i] != '%' || (s[i+1] != 'u' && s[i+1] != 'U') {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i+2 : i+6]) {
		v, ok := unhex(c)
		if !ok {
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}

func hasEscape(b []byte) bool {
	s := unsafe.String(unsafe.SliceData(b), len(b))
	for i := strings.IndexByte(s, '%'); i >= 0 && i < len(s); {
		if _, ok := escapeAt(s, i); ok {
			return true
		}
		if _, ok := uEscapeAt(s, i); ok {
			return true
		}
		j := strings.IndexByte(s[i+1:], '%')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return false
}

// appendDecoded appends s percent-decoded (and %uXXXX as UTF-8) to dst; with
// plus, '+' becomes a space. A '%' that starts no escape is kept, and counted
// in *bad when bad is not nil.
func appendDecoded(dst []byte, s string, plus bool, bad *bool) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%':
			if b, ok := escapeAt(s, i); ok {
				dst = append(dst, b)
				i += 2
				continue
			}
			if r, ok := uEscapeAt(s, i); ok {
				dst = utf8.AppendRune(dst, r)
				i += 5
				continue
			}
			if bad != nil {
				*bad = true
			}
			dst = append(dst, c)
		case c == '+' && plus:
			dst = append(dst, ' ')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// isPlainPath reports whether p needs no normalisation: no escape, backslash,
// ';', non-ASCII or control byte, and no empty or dot segment.
func isPlainPath(p string) bool {
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '%' || c == '\\' || c == ';' || c < 0x20 || c >= 0x7f:
			return false
		case c == '/' && i+1 < len(p) && (p[i+1] == '/' || p[i+1] == '.'):
			return false
		}
	}
	return true
}

// normalizePath computes http.norm.path and the anomalies of p, in n's
// buffers.
func normalizePath(p string, n *normalized) (string, Anomaly) {
	var an Anomaly
	// Decode until nothing is left to decode, at most maxDecodes rounds,
	// alternating between two buffers.
	cur := p
	for round := 0; round < maxDecodes && strings.IndexByte(cur, '%') >= 0; round++ {
		var bad bool
		buf := &n.decA
		if round%2 == 1 {
			buf = &n.decB
		}
		*buf = appendDecoded((*buf)[:0], cur, false, &bad)
		if bad && round == 0 {
			an |= AnomalyBadEscape
		}
		next := unsafe.String(unsafe.SliceData(*buf), len(*buf))
		if next == cur {
			break
		}
		if round == 1 {
			an |= AnomalyDoubleEncoded
		}
		cur = next
	}
	// Overlong UTF-8, invalid UTF-8, NUL and backslashes.
	out := n.fix[:0]
	for i := 0; i < len(cur); {
		c := cur[i]
		if c < utf8.RuneSelf {
			switch c {
			case 0:
				an |= AnomalyNullByte
			case '\\':
				an |= AnomalyBackslash
				c = '/'
			}
			out = append(out, c)
			i++
			continue
		}
		if r, size, ok := overlong(cur[i:]); ok {
			an |= AnomalyOverlongUTF8
			if r == '\\' {
				an |= AnomalyBackslash
				r = '/'
			}
			out = append(out, byte(r))
			i += size
			continue
		}
		r, size := utf8.DecodeRuneInString(cur[i:])
		if r == utf8.RuneError && size == 1 {
			an |= AnomalyInvalidUTF8
		}
		out = append(out, cur[i:i+size]...)
		i += size
	}
	n.fix = out
	dec := unsafe.String(unsafe.SliceData(out), len(out))
	if !strings.HasPrefix(dec, "/") {
		return dec, an
	}
	n.pathBuf, an = resolve(n.pathBuf[:0], dec, an)
	return unsafe.String(unsafe.SliceData(n.pathBuf), len(n.pathBuf)), an
}

// overlong decodes an overlong UTF-8 form of an ASCII character at the start
// of s: two bytes (C0 AE) or three (E0 80 AE).
func overlong(s string) (rune, int, bool) {
	if len(s) >= 2 && (s[0] == 0xC0 || s[0] == 0xC1) && s[1]&0xC0 == 0x80 {
		return rune(s[0]&0x1F)<<6 | rune(s[1]&0x3F), 2, true
	}
	if len(s) >= 3 && s[0] == 0xE0 && s[1]&0xE0 == 0x80 && s[2]&0xC0 == 0x80 {
		r := rune(s[1]&0x3F)<<6 | rune(s[2]&0x3F)
		if r < 0x80 {
			return r, 3, true
		}
	}
	return 0, 0, false
}

// resolve appends p (which starts with '/') to dst with ';' parameters
// dropped from each segment and empty, "." and ".." segments resolved, as
// RFC 3986 remove_dot_segments does, and reports what it found.
func resolve(dst []byte, p string, an Anomaly) ([]byte, Anomaly) {
	dst = append(dst, '/')
	p = p[1:]
	trailing := false
	for {
		seg := p
		last := true
		if i := strings.IndexByte(p, '/'); i >= 0 {
			seg, p, last = p[:i], p[i+1:], false
		}
		if i := strings.IndexByte(seg, ';'); i >= 0 {
			an |= AnomalyPathParam
			seg = seg[:i]
		}
		trailing = false
		switch seg {
		case "":
			if !last {
				an |= AnomalyRepeatedSlash
			}
			trailing = last
		case ".":
			an |= AnomalyDotSegment
			trailing = true
		case "..":
			an |= AnomalyDotSegment | AnomalyTraversal
			// Drop the last output segment: dst is "/a/b/" → "/a/".
			if len(dst) == 1 {
				an |= AnomalyEscapesRoot
			} else {
				j := strings.LastIndexByte(unsafe.String(unsafe.SliceData(dst), len(dst)-1), '/')
				dst = dst[:j+1]
			}
			trailing = true
		default:
			dst = append(dst, seg...)
			dst = append(dst, '/')
		}
		if last {
			break
		}
	}
	if !trailing && len(dst) > 1 {
		dst = dst[:len(dst)-1]
	}
	return dst, an
}

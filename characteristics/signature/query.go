package signature

import (
	"bytes"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// A query's arguments are not all alike. Most hold what a program put there
// (an id, a page, a token), where a payload fragment is an attack; but a
// search box's argument holds what a person typed, and a dashboard's holds a
// query language (PromQL, Lucene, KQL, JSON filters), where the same
// fragments occur in honest use ("select * from readers", "<script> tags
// tutorial", rate(x[5m])). ScanQuery and ScanQueryText keep the two apart,
// so that rules can block on the first and only doubt the second.

// textArgs are the names of arguments whose values are free text or a query
// language, compared in ASCII lower case.
var textArgs = map[string]bool{
	// search boxes and search engines
	"q": true, "s": true, "search": true, "query": true, "keyword": true, "keywords": true, "k": true,
	"kw": true, "term": true, "terms": true, "text": true, "searchterm": true, "search_term": true,
	"search_query": true, "searchtext": true, "find": true, "wd": true, "p": true, "oq": true,
	"utm_term": true, "st": true, "searchword": true, "phrase": true, "question": true,
	// query languages of dashboards and search back ends
	"expr": true, "filter": true, "filters": true, "where": true, "match": true, "kql": true,
	"lucene": true, "promql": true, "jql": true, "fql": true, "_a": true, "_g": true, "_q": true,
	"left": true, "right": true, "panes": true, "match[]": true, "selector": true, "logql": true,
}

// textArg reports whether the decoded argument name n holds free text: a
// name of textArgs, or a Grafana template variable (var-...).
func textArg(n string) bool {
	if len(n) > 24 {
		return false
	}
	var b [24]byte
	for i := 0; i < len(n); i++ {
		b[i] = fold(n[i])
	}
	l := b[:len(n)]
	return textArgs[string(l)] || len(l) > 4 && string(l[:4]) == "var-"
}

// Limits of a query's shape, from the CRS defaults: longer runs of one byte,
// more arguments and longer names are what overflows and hash-flooding
// send, not browsers.
const (
	maxRun     = 100 // bytes of one value in a row (NOP sleds, 'A'*N, Code Red's N*N)
	maxArgs    = 255
	maxArgName = 100
)

// ScanQuery returns the classes found in the arguments of the raw query q
// that are not free text (textArg): each argument percent-decoded ('+' as a
// space, %uXXXX as UTF-8, decoded again when still encoded) and scanned,
// name and value together. It adds the classes of the query's shape:
// EncodingEvasion (%uXXXX, a NUL byte, overlong UTF-8), InvalidUTF8 (other
// bytes that are not UTF-8 once decoded), Overflow (a run of more than
// maxRun equal bytes, more than maxArgs arguments, a name longer than
// maxArgName); these count for every argument.
func ScanQuery(q string) Mask { return scanQuery(q, false) }

// ScanQueryText returns the classes found in the values of the free-text
// arguments of q (textArg), decoded as ScanQuery decodes.
func ScanQueryText(q string) Mask { return scanQuery(q, true) }

func scanQuery(q string, text bool) Mask {
	var m Mask
	if !text {
		m = queryShape(q)
	}
	if q == "" {
		return m
	}
	bp := argBufs.Get().(*[]byte)
	defer argBufs.Put(bp)
	for q != "" {
		part := q
		if i := argEnd(q); i < len(q) {
			part, q = q[:i], q[i+1:]
		} else {
			q = ""
		}
		if part == "" {
			continue
		}
		name, value, ok := strings.Cut(part, "=")
		isText := ok && textArg(decodeInto(bp, name))
		if isText != text {
			continue
		}
		s := part
		if text {
			s = value
		}
		if s == "" {
			continue
		}
		d := decodeInto(bp, s)
		m |= Scan(d) | shellUnquoted(d)
		if !text {
			m |= decodedShape(d)
		}
	}
	return m
}

// argEnd returns the index of the '&' that ends q's first argument, or
// len(q). An '&' that starts an HTML entity (&lt; &#60; &quot;) is part of
// the value: browsers encode '&' in values, and payloads written with
// entities are read whole.
func argEnd(q string) int {
	for i := 0; i < len(q); i++ {
		if q[i] != '&' {
			continue
		}
		j := i + 1
		if j < len(q) && q[j] == '#' {
			j++
		}
		for j < len(q) && j-i < 10 && isIdent(q[j]) {
			j++
		}
		if j < len(q) && q[j] == ';' && j > i+2 {
			continue
		}
		return i
	}
	return len(q)
}

// decodeInto percent-decodes s into *bp ('+' as a space, %uXXXX as UTF-8),
// once more when the result is still encoded; the result is valid until *bp
// is reused.
func decodeInto(bp *[]byte, s string) string {
	if strings.IndexByte(s, '%') < 0 && strings.IndexByte(s, '+') < 0 {
		return s
	}
	b := append((*bp)[:0], s...)
	b = decodeInPlace(b, true)
	if bytes.IndexByte(b, '%') >= 0 {
		b = decodeInPlace(b, false)
	}
	if cap(b) > maxArg {
		*bp = make([]byte, 0, 256) // do not keep large buffers in the pool
		return string(b)
	}
	*bp = b
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// decodeInPlace percent-decodes b over itself (a decoded form is never
// longer than its escape) and returns the decoded prefix.
func decodeInPlace(b []byte, plus bool) []byte {
	w := 0
	for r := 0; r < len(b); r++ {
		c := b[r]
		switch {
		case c == '+' && plus:
			c = ' '
		case c == '%' && r+2 < len(b):
			if h, ok1 := unhex(b[r+1]); ok1 {
				if l, ok2 := unhex(b[r+2]); ok2 {
					c = h<<4 | l
					r += 2
					break
				}
			}
			if r+5 < len(b) && b[r+1]|0x20 == 'u' && isHex(b[r+2]) && isHex(b[r+3]) && isHex(b[r+4]) && isHex(b[r+5]) {
				var x rune
				for _, d := range b[r+2 : r+6] {
					v, _ := unhex(d)
					x = x<<4 | rune(v)
				}
				w += utf8.EncodeRune(b[w:], x) // 3 bytes at most, over 6
				r += 5
				continue
			}
		}
		b[w] = c
		w++
	}
	return b[:w]
}

// queryShape returns the shape classes of the raw query q: %uXXXX escapes,
// long runs of one byte, many arguments, long names.
func queryShape(q string) Mask {
	var m Mask
	args, run, name := 1, 0, 0
	inName := true
	var prev byte
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c == prev {
			run++
			if run >= maxRun {
				m |= 1 << Overflow
			}
		} else {
			run, prev = 1, c
		}
		switch c {
		case '&':
			args++
			inName, name = true, 0
			continue
		case '=':
			inName = false
		case '%':
			if i+5 < len(q) && q[i+1]|0x20 == 'u' && isHex(q[i+2]) && isHex(q[i+3]) && isHex(q[i+4]) && isHex(q[i+5]) {
				m |= 1 << EncodingEvasion
			}
		}
		if inName {
			name++
			if name > maxArgName {
				m |= 1 << Overflow
			}
		}
	}
	if args > maxArgs {
		m |= 1 << Overflow
	}
	return m
}

func isHex(c byte) bool { _, ok := unhex(c); return ok }

// decodedShape returns the classes of a decoded argument's bytes: a NUL
// byte or an overlong UTF-8 form (EncodingEvasion), other invalid UTF-8.
func decodedShape(d string) Mask {
	var m Mask
	ascii := true
	for i := 0; i < len(d); i++ {
		if d[i] == 0 {
			m |= 1 << EncodingEvasion
		}
		if d[i] >= 0x80 {
			ascii = false
		}
	}
	if ascii || utf8.ValidString(d) {
		return m
	}
	for i := 0; i+1 < len(d); i++ {
		// C0/C1 lead bytes and E0 80-9F, F0 80-8F: overlong forms.
		if c := d[i]; c == 0xc0 || c == 0xc1 || c == 0xe0 && d[i+1] < 0xa0 && d[i+1] >= 0x80 || c == 0xf0 && d[i+1] < 0x90 && d[i+1] >= 0x80 {
			return m | 1<<EncodingEvasion
		}
	}
	return m | 1<<InvalidUTF8
}

// shellUnquoted returns CMDi when d, read as a shell would join its words,
// holds a command fragment: empty quotes (a pair of single or of double
// quotes), backslashes and unset variables ($u, $XX) split a command name
// for a matcher but not for the shell ("w\get", "sh$XX -c", "|$u wget").
// Values without those bytes, and values over 512 bytes, cost a byte scan.
func shellUnquoted(d string) Mask {
	if len(d) > 512 || strings.IndexAny(d, `'"\$`) < 0 {
		return 0
	}
	var buf [512]byte
	n := 0
	changed := false
	for i := 0; i < len(d); i++ {
		c := d[i]
		switch {
		case (c == '\'' || c == '"') && i+1 < len(d) && d[i+1] == c:
			i++
			changed = true
			continue
		case c == '\\':
			changed = true
			continue
		case c == '$' && i+1 < len(d) && (isLetter(d[i+1]) || d[i+1] == '_'):
			j := i + 1
			for j < len(d) && isIdent(d[j]) {
				j++
			}
			i = j - 1
			changed = true
			continue
		}
		buf[n] = c
		n++
	}
	if !changed {
		return 0
	}
	return matcher().scan(unsafe.String(&buf[0], n)) & (1 << CMDi)
}

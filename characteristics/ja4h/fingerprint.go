package ja4h

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"slices"
)

// methods is the method table (matched case-insensitively); anything else
// is "00".
var methods = map[string]string{
	"acl": "ac", "baseline-control": "ba", "bind": "bi", "checkin": "cn", "checkout": "ct",
	"connect": "co", "copy": "cy", "delete": "de", "get": "ge", "head": "he",
	"label": "la", "link": "li", "lock": "lo", "merge": "me", "mkactivity": "ma",
	"mkcalendar": "mc", "mkcol": "ml", "mkredirectref": "mr", "mkworkspace": "mw", "move": "mo",
	"m-search": "ms", "notify": "no", "options": "op", "patch": "pa", "post": "po", "pri": "pr",
	"propfind": "pf", "proppatch": "pp", "purge": "pr", "put": "pu",
	"rebind": "rb", "report": "rp", "search": "se", "subscribe": "su", "trace": "tr", "unbind": "ub",
	"uncheckout": "uc", "unlink": "ui", "unlock": "uo", "unsubscribe": "un",
	"update": "up", "updateredirectref": "ur", "version-control": "ve",
}

// MethodCode is JA4H's two-character method code, "00" when unknown.
func MethodCode(m []byte) string {
	var low [32]byte
	if len(m) > len(low) {
		return "00"
	}
	for i, c := range m {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		low[i] = c
	}
	if code, ok := methods[string(low[:len(m)])]; ok {
		return code
	}
	return "00"
}

const hexDigits = "0123456789abcdef"

type cookie struct{ name, value, pair []byte }

// Fingerprint computes JA4H and its raw form for one request.
func Fingerprint(r *Request) (ja4h, raw string) {
	var a [12]byte
	copy(a[:2], MethodCode(r.Method))
	a[2], a[3] = versionCode(r.Version)

	var namesBuf [1024]byte
	names := namesBuf[:0]
	count := 0
	hasCookie, hasReferer := false, false
	var lang []byte
	hasLang := false
	var cs [32]cookie
	cookies := cs[:0]
	for _, h := range r.Headers {
		switch {
		case asciiEqualFold(h.Name, "cookie"):
			hasCookie = true
			cookies = appendCookies(cookies, h.Value)
			continue
		case asciiEqualFold(h.Name, "referer"):
			hasReferer = true
			continue
		case !hasLang && asciiEqualFold(h.Name, "accept-language"):
			hasLang, lang = true, h.Value
		}
		if count > 0 {
			names = append(names, ',')
		}
		names = append(names, h.Name...)
		count++
	}
	a[4], a[5] = 'n', 'n'
	if hasCookie {
		a[4] = 'c'
	}
	if hasReferer {
		a[5] = 'r'
	}
	count = min(count, 99)
	a[6], a[7] = byte('0'+count/10), byte('0'+count%10)
	langCode(a[8:12], lang)

	slices.SortFunc(cookies, func(x, y cookie) int {
		if c := bytes.Compare(x.name, y.name); c != 0 {
			return c
		}
		return bytes.Compare(x.value, y.value)
	})
	var cnBuf, cpBuf [1024]byte
	cn, cp := cnBuf[:0], cpBuf[:0]
	for i, c := range cookies {
		if i > 0 {
			cn = append(cn, ',')
			cp = append(cp, ',')
		}
		cn = append(cn, c.name...)
		cp = append(cp, c.pair...)
	}

	var out [64]byte
	o := append(out[:0], a[:]...)
	o = append(o, '_')
	o = appendSha12(o, names)
	o = append(o, '_')
	o = appendHash12(o, cn)
	o = append(o, '_')
	o = appendHash12(o, cp)
	ja4h = string(o)

	var rawBuf [2048]byte
	rb := append(rawBuf[:0], a[:]...)
	rb = append(rb, '_')
	rb = append(rb, names...)
	rb = append(rb, '_')
	rb = append(rb, cn...)
	rb = append(rb, '_')
	rb = append(rb, cp...)
	return ja4h, string(rb)
}

// appendCookies splits one Cookie value on ';' into name=value pairs,
// skipping leading SP/HT, empty pieces and pieces without '='.
func appendCookies(dst []cookie, v []byte) []cookie {
	for len(v) > 0 {
		piece := v
		if i := bytes.IndexByte(v, ';'); i >= 0 {
			piece, v = v[:i], v[i+1:]
		} else {
			v = nil
		}
		for len(piece) > 0 && (piece[0] == ' ' || piece[0] == '\t') {
			piece = piece[1:]
		}
		eq := bytes.IndexByte(piece, '=')
		if eq < 0 {
			continue
		}
		dst = append(dst, cookie{name: piece[:eq], value: piece[eq+1:], pair: piece})
	}
	return dst
}

// versionCode gives the digits after '/' without the '.', as two characters
// ("HTTP/1.1" → "11").
func versionCode(v []byte) (byte, byte) {
	i := bytes.IndexByte(v, '/')
	if i < 0 {
		return '0', '0'
	}
	d := [2]byte{'0', '0'}
	n := 0
	for _, c := range v[i+1:] {
		if c == '.' {
			continue
		}
		if n == 2 {
			break
		}
		d[n] = c
		n++
	}
	return d[0], d[1]
}

// langCode writes the 4-character Accept-Language field.
func langCode(dst []byte, v []byte) {
	for i := range dst {
		dst[i] = '0'
	}
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	n := 0
	for i := 0; i < len(v) && i < 5 && n < 4; i++ {
		c := v[i]
		switch {
		case c == ',' || c == ';':
			return
		case c == ' ' || c == '-':
		case c >= 'a' && c <= 'z':
			dst[n] = c
			n++
		case c >= 'A' && c <= 'Z':
			dst[n] = c + 'a' - 'A'
			n++
		default:
			dst[n] = hexDigits[c>>4]
			n++
			if n < 4 {
				dst[n] = hexDigits[c&0xf]
				n++
			}
		}
	}
}

// appendSha12 appends the first 12 hex digits of SHA-256(b), even for empty
// b (JA4H part b).
func appendSha12(dst, b []byte) []byte {
	sum := sha256.Sum256(b)
	var h [12]byte
	hex.Encode(h[:], sum[:6])
	return append(dst, h[:]...)
}

// appendHash12 is appendSha12, or twelve zeros for empty b (parts c and d).
func appendHash12(dst, b []byte) []byte {
	if len(b) == 0 {
		return append(dst, "000000000000"...)
	}
	return appendSha12(dst, b)
}

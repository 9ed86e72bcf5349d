package nginxlog

import (
	"bytes"
	"net/netip"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/guardd/guardd/characteristics"
)

// parseUint parses up to 19 decimal digits.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}

var pow10 = [...]float64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15}

// parseSeconds parses a non-negative decimal like nginx's "0.123". With at most
// 15 digits the result is exactly rounded (both operands are exact doubles and
// the division rounds once), as strconv.ParseFloat would give.
func parseSeconds(b []byte) (float64, bool) {
	var m uint64
	digits, frac := 0, -1
	for i, c := range b {
		switch {
		case '0' <= c && c <= '9':
			m = m*10 + uint64(c-'0')
			digits++
			if frac >= 0 {
				frac++
			}
		case c == '.' && frac < 0 && i > 0:
			frac = 0
		default:
			return 0, false
		}
	}
	if digits == 0 || digits > 15 || frac == 0 {
		return 0, false
	}
	if frac < 0 {
		frac = 0
	}
	return float64(m) / pow10[frac], true
}

// month returns 1..12 for an English three-letter month abbreviation.
func month(b []byte) int {
	switch string(b) {
	case "Jan":
		return 1
	case "Feb":
		return 2
	case "Mar":
		return 3
	case "Apr":
		return 4
	case "May":
		return 5
	case "Jun":
		return 6
	case "Jul":
		return 7
	case "Aug":
		return 8
	case "Sep":
		return 9
	case "Oct":
		return 10
	case "Nov":
		return 11
	case "Dec":
		return 12
	}
	return 0
}

// parseAddr parses an IPv4 or IPv6 address like netip.ParseAddr, with fast
// paths for plain dotted IPv4 and for IPv6 in hex groups; anything else goes
// to netip.ParseAddr.
func parseAddr(b []byte) (netip.Addr, bool) {
	var a [4]byte
	field, n, dots := 0, 0, 0
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9' && n < 3 && !(n > 0 && field == 0):
			field = field*10 + int(c-'0')
			n++
		case c == '.' && n > 0 && dots < 3 && field <= 255:
			a[dots] = byte(field)
			dots++
			field, n = 0, 0
		default:
			return parseIPv6(b)
		}
	}
	if dots != 3 || n == 0 || field > 255 {
		return parseAddrSlow(b)
	}
	a[3] = byte(field)
	return netip.AddrFrom4(a), true
}

// prefixIPv4 parses the dotted IPv4 address that b starts with, as parseAddr
// would, and returns it with its length; ok is false when b does not start
// with one (a leading zero, a fifth digit, an IPv6 address), and the caller
// then takes parseAddr's path. One pass, no search for where it ends first:
// most client addresses in a log are IPv4.
func prefixIPv4(b []byte) (a [4]byte, n int, ok bool) {
	for k := range 4 {
		if k > 0 {
			if n >= len(b) || b[n] != '.' {
				return a, 0, false
			}
			n++
		}
		if n >= len(b) {
			return a, 0, false
		}
		v := uint(b[n]) - '0'
		if v > 9 {
			return a, 0, false
		}
		n++
		if v != 0 && n < len(b) { // a 0 stands alone: no leading zeros
			if d := uint(b[n]) - '0'; d <= 9 {
				v = v*10 + d
				n++
				if n < len(b) {
					if d := uint(b[n]) - '0'; d <= 9 {
						v = v*10 + d
						n++
					}
				}
			}
		}
		if v > 255 {
			return a, 0, false
		}
		a[k] = byte(v)
	}
	return a, n, true
}

// hexValue maps a byte to its value as a hex digit, -1 if it is not one.
var hexValue = func() (t [256]int8) {
	for i := range t {
		t[i] = int8(unhex(byte(i)))
	}
	return t
}()

// parseIPv6 is netip's IPv6 parser for the addresses nginx logs: hex groups
// of up to four digits and at most one "::". Anything else (a zone, an
// embedded IPv4, an error) goes to netip.ParseAddr.
func parseIPv6(b []byte) (netip.Addr, bool) {
	var ip [16]byte
	ellipsis := -1 // where the "::" is in ip
	s := b
	if len(s) >= 2 && s[0] == ':' && s[1] == ':' {
		ellipsis = 0
		s = s[2:]
		if len(s) == 0 {
			return netip.IPv6Unspecified(), true
		}
	}
	i := 0
	for i < 16 {
		off, acc := 0, 0
		for ; off < len(s) && off < 5; off++ {
			h := hexValue[s[off]]
			if h < 0 {
				break
			}
			acc = acc<<4 | int(h)
		}
		if off == 0 || off > 4 || off < len(s) && s[off] == '.' {
			return parseAddrSlow(b)
		}
		ip[i], ip[i+1] = byte(acc>>8), byte(acc)
		i += 2
		s = s[off:]
		if len(s) == 0 {
			break
		}
		if s[0] != ':' || len(s) == 1 {
			return parseAddrSlow(b)
		}
		s = s[1:]
		if s[0] == ':' {
			if ellipsis >= 0 {
				return parseAddrSlow(b)
			}
			ellipsis = i
			s = s[1:]
			if len(s) == 0 {
				break
			}
		}
	}
	if len(s) != 0 {
		return parseAddrSlow(b)
	}
	if i < 16 {
		if ellipsis < 0 {
			return parseAddrSlow(b)
		}
		n := 16 - i
		copy(ip[ellipsis+n:], ip[ellipsis:i])
		clear(ip[ellipsis : ellipsis+n])
	} else if ellipsis >= 0 {
		return parseAddrSlow(b)
	}
	return netip.AddrFrom16(ip), true
}

func parseAddrSlow(b []byte) (netip.Addr, bool) {
	ip, err := netip.ParseAddr(str(b))
	return ip, err == nil
}

// d2 parses two decimal digits, -1 when one is not a digit.
func d2(a, b byte) int {
	x, y := int(a)-'0', int(b)-'0'
	if uint(x) > 9 || uint(y) > 9 {
		return -1
	}
	return x*10 + y
}

// digits parses a fixed-width decimal field, -1 when b holds a non-digit.
func digits(b []byte) int {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// unixTime returns the Unix time of a civil date and time, checking ranges;
// the day count is Howard Hinnant's days_from_civil.
func unixTime(y, mo, d, h, mi, s int) (int64, bool) {
	if y < 0 || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 59 {
		return 0, false
	}
	if mo <= 2 {
		y--
	}
	era := y / 400
	if y < 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (mo + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	days := int64(era)*146097 + int64(doe) - 719468
	return days*86400 + int64(h*3600+mi*60+s), true
}

func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// zoneOffset parses "+hhmm" or "+hh:mm" into seconds east of UTC.
func zoneOffset(b []byte) (int, bool) {
	var h, m int
	switch len(b) {
	case 5:
		h, m = d2(b[1], b[2]), d2(b[3], b[4])
	case 6:
		if b[3] != ':' {
			return 0, false
		}
		h, m = d2(b[1], b[2]), d2(b[4], b[5])
	default:
		return 0, false
	}
	if h < 0 || h > 23 || m < 0 || m > 59 {
		return 0, false
	}
	off := h*3600 + m*60
	switch b[0] {
	case '+':
		return off, true
	case '-':
		return -off, true
	}
	return 0, false
}

// parseTimeLocal parses $time_local, "10/Oct/2000:13:55:36 -0700".
func parseTimeLocal(b []byte) (time.Time, bool) {
	if len(b) != 26 || b[2] != '/' || b[6] != '/' || b[11] != ':' || b[14] != ':' || b[17] != ':' || b[20] != ' ' {
		return time.Time{}, false
	}
	yh, yl := d2(b[7], b[8]), d2(b[9], b[10])
	if yh < 0 || yl < 0 {
		return time.Time{}, false
	}
	sec, ok := unixTime(yh*100+yl, month(b[3:6]), d2(b[0], b[1]), d2(b[12], b[13]), d2(b[15], b[16]), d2(b[18], b[19]))
	if !ok {
		return time.Time{}, false
	}
	off, ok := zoneOffset(b[21:26])
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(sec-int64(off), 0).UTC(), true
}

// parseTimeISO parses $time_iso8601, "2000-10-10T13:55:36-07:00", also with a
// fraction of a second and with "Z".
func parseTimeISO(b []byte) (time.Time, bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || b[10] != 'T' && b[10] != ' ' || b[13] != ':' || b[16] != ':' {
		return time.Time{}, false
	}
	sec, ok := unixTime(digits(b[0:4]), digits(b[5:7]), digits(b[8:10]), digits(b[11:13]), digits(b[14:16]), digits(b[17:19]))
	if !ok {
		return time.Time{}, false
	}
	rest := b[19:]
	nsec := 0
	if rest[0] == '.' {
		i := 1
		scale := 100_000_000
		for ; i < len(rest) && '0' <= rest[i] && rest[i] <= '9'; i++ {
			nsec += int(rest[i]-'0') * scale
			scale /= 10
		}
		if i == 1 || i > 10 {
			return time.Time{}, false
		}
		rest = rest[i:]
	}
	off := 0
	if len(rest) != 1 || rest[0] != 'Z' {
		if off, ok = zoneOffset(rest); !ok {
			return time.Time{}, false
		}
	}
	return time.Unix(sec-int64(off), int64(nsec)).UTC(), true
}

// parseMsec parses $msec, seconds since the epoch with a fraction, "1700000000.123".
func parseMsec(b []byte) (time.Time, bool) {
	i := bytes.IndexByte(b, '.')
	ip, fp := b, []byte(nil)
	if i >= 0 {
		ip, fp = b[:i], b[i+1:]
		if len(fp) == 0 || len(fp) > 9 {
			return time.Time{}, false
		}
	}
	if len(ip) == 0 || len(ip) > 12 {
		return time.Time{}, false
	}
	sec := digits(ip)
	if sec < 0 {
		return time.Time{}, false
	}
	nsec := 0
	if fp != nil {
		f := digits(fp)
		if f < 0 {
			return time.Time{}, false
		}
		for n := len(fp); n < 9; n++ {
			f *= 10
		}
		nsec = f
	}
	return time.Unix(int64(sec), int64(nsec)).UTC(), true
}

// isToken reports whether c may appear in an HTTP method (RFC 9110 tchar).
func isToken(c byte) bool { return tokenByte[c] }

// tokenByte holds the bytes of an HTTP token (RFC 9110 tchar).
var tokenByte = func() (t [256]bool) {
	for c := range t {
		t[c] = 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", byte(c)) >= 0
	}
	return t
}()

// parseRequest splits $request, "GET /a?b=c HTTP/1.1", into e. It reports
// false, touching nothing, when s is not a request line (a TLS handshake sent
// to a plain-text port, a scanner's garbage).
func parseRequest(s string, e *characteristics.Event) bool {
	sp := strings.IndexByte(s, ' ')
	if sp <= 0 || sp == len(s)-1 {
		return false
	}
	for i := 0; i < sp; i++ {
		if !isToken(s[i]) {
			return false
		}
	}
	target, proto := s[sp+1:], ""
	if last := strings.LastIndexByte(target, ' '); last >= 0 {
		if p := target[last+1:]; strings.HasPrefix(p, "HTTP/") {
			target, proto = target[:last], p
		}
	}
	if target == "" || target[0] == ' ' {
		return false
	}
	e.Method = s[:sp]
	e.Path, e.Query = splitTarget(target)
	e.Protocol = proto
	return true
}

// splitTarget splits a request target at its first '?'.
func splitTarget(s string) (path, query string) {
	if i := strings.IndexByte(s, '?'); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

// parseCookies adds the cookies of a Cookie header: "a=1; b=2". A part without
// '=' is a cookie with that name and an empty value.
func parseCookies(s string, e *characteristics.Event) {
	for s != "" {
		part := s
		if i := strings.IndexByte(s, ';'); i >= 0 {
			part, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		part = trimSpace(part)
		if part == "" {
			continue
		}
		name, value := part, ""
		if i := strings.IndexByte(part, '='); i >= 0 {
			name, value = trimSpace(part[:i]), trimSpace(part[i+1:])
		}
		e.Cookies = append(e.Cookies, characteristics.Field{Name: name, Value: value})
	}
}

func trimSpace(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// unescapeDefault undoes escape=default in place: \xHH becomes the byte HH,
// and Apache's \" and \\ a quote and a backslash. Other backslashes are kept.
func unescapeDefault(b []byte) []byte {
	i := bytes.IndexByte(b, '\\')
	if i < 0 {
		return b
	}
	w := i
	for r := i; r < len(b); {
		c := b[r]
		if c == '\\' && r+1 < len(b) && (b[r+1] == '"' || b[r+1] == '\\') {
			// Apache's \" and \\: nginx writes neither (a backslash is \x5C).
			b[w] = b[r+1]
			w++
			r += 2
			continue
		}
		if c == '\\' && r+3 < len(b) && b[r+1] == 'x' {
			if h, l := unhex(b[r+2]), unhex(b[r+3]); h >= 0 && l >= 0 {
				b[w] = byte(h<<4 | l)
				w++
				r += 4
				continue
			}
		}
		b[w] = c
		w++
		r++
	}
	return b[:w]
}

// jsonQuotesEscaped reports whether every '"' in b follows an escaping '\'.
func jsonQuotesEscaped(b []byte) bool {
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return false
		}
	}
	return true
}

// unescapeJSON undoes JSON string escapes in place. \uXXXX becomes UTF-8 (a
// lone surrogate becomes U+FFFD, as encoding/json does); an invalid escape is
// kept as it is.
func unescapeJSON(b []byte) []byte {
	i := bytes.IndexByte(b, '\\')
	if i < 0 {
		return b
	}
	w := i
	for r := i; r < len(b); {
		c := b[r]
		if c != '\\' || r+1 >= len(b) {
			b[w] = c
			w++
			r++
			continue
		}
		var out byte
		switch b[r+1] {
		case '"', '\\', '/':
			out = b[r+1]
		case 'b':
			out = '\b'
		case 'f':
			out = '\f'
		case 'n':
			out = '\n'
		case 'r':
			out = '\r'
		case 't':
			out = '\t'
		case 'u':
			rn, n := hex4(b[r+2:])
			if n == 0 {
				b[w] = c
				w++
				r++
				continue
			}
			r += 2 + n
			if 0xd800 <= rn && rn < 0xdc00 && r+6 <= len(b) && b[r] == '\\' && b[r+1] == 'u' {
				if lo, m := hex4(b[r+2:]); m == 4 && 0xdc00 <= lo && lo < 0xe000 {
					rn = (rn-0xd800)<<10 | (lo - 0xdc00) + 0x10000
					r += 6
				}
			}
			if 0xd800 <= rn && rn < 0xe000 {
				rn = utf8.RuneError
			}
			w += utf8.EncodeRune(b[w:], rn) // 6 bytes read, at most 4 written
			continue
		default:
			b[w] = c
			w++
			r++
			continue
		}
		b[w] = out
		w++
		r += 2
	}
	return b[:w]
}

// hex4 parses four hex digits, returning the number of bytes used (0 or 4).
func hex4(b []byte) (rune, int) {
	if len(b) < 4 {
		return 0, 0
	}
	var r rune
	for _, c := range b[:4] {
		h := unhex(c)
		if h < 0 {
			return 0, 0
		}
		r = r<<4 | rune(h)
	}
	return r, 4
}

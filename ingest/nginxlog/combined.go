package nginxlog

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/guardd/guardd/characteristics"
)

// Variables of Combined, in order: what parseCombined relies on.
const (
	cAddr = iota
	cUser
	cTime
	cRequest
	cStatus
	cBytes
	cReferer
	cUserAgent
)

// parseCombined is Parse for the combined format (escape=default) on the
// lines nginx writes: an IPv4 or IPv6 address, a 26-byte $time_local, a
// status and a byte count, and no raw '"' in the user agent. It does what the
// general path does (split at the first occurrence of each literal, then the
// typed values, then the others unescaped in place, in the format's order)
// without the per-variable dispatch. It reports false when the line is
// anything else, having touched nothing but e; Parse then takes the general
// path, which makes the same event of every line this accepts
// (FuzzCombinedFastPath holds the two to that).
func (f *Format) parseCombined(line []byte, e *characteristics.Event, c *Cache) bool {
	e.Reset()
	e.Source = characteristics.SourceNginxLog
	// $remote_addr " - ": the first ' ' starts the first " - ", if any. An
	// IPv4 address, which holds no ' ', ends at the first.
	var ip netip.Addr
	a4, sp, ok := prefixIPv4(line)
	if ok && sp < len(line) && line[sp] == ' ' {
		ip = netip.AddrFrom4(a4)
	} else {
		sp = bytes.IndexByte(line, ' ')
		if sp <= 0 {
			return false
		}
		if ip, ok = c.addr(line[:sp]); !ok {
			return false
		}
	}
	if !hasLiteral(line[sp:], " - ") {
		return false
	}
	// $remote_user " ["
	userAt := sp + 3
	userEnd := userAt + 1 // "-", the usual value, ends at the first " ["
	if !hasLiteral(line[userAt:], "- [") {
		if userEnd = indexLiteral(line, userAt, " [", false); userEnd < 0 {
			return false
		}
	}
	// $time_local "] \"": a time that parses holds no ']', so the literal
	// right after its 26 bytes is the first.
	timeAt := userEnd + 2
	if len(line) < timeAt+29 || !hasLiteral(line[timeAt+26:], "] \"") {
		return false
	}
	t, ok := c.parse(line[timeAt : timeAt+26])
	if !ok {
		return false
	}
	// $request "\" "
	reqAt := timeAt + 29
	reqEnd := indexLiteral(line, reqAt, "\" ", true)
	if reqEnd < 0 {
		return false
	}
	// $status " " and $body_bytes_sent " \"": digits hold no ' ', so the
	// literal right after the digits is the first.
	statusAt := reqEnd + 2
	statusEnd := skipDigits(line, statusAt)
	if statusEnd == len(line) || line[statusEnd] != ' ' {
		return false
	}
	status, ok := parseUint(line[statusAt:statusEnd])
	if !ok || status > 999 {
		return false
	}
	bytesAt := statusEnd + 1
	bytesEnd := skipDigits(line, bytesAt)
	if !hasLiteral(line[bytesEnd:], " \"") {
		return false
	}
	sent, ok := parseUint(line[bytesAt:bytesEnd])
	if !ok || sent > 1<<62 {
		return false
	}
	// $http_referer "\" \""
	refAt := bytesEnd + 2
	refEnd := indexLiteral(line, refAt, "\" \"", true)
	if refEnd < 0 {
		return false
	}
	// $http_user_agent, ended by the '"' that ends the line; a raw '"' in it
	// (not Apache's \") is an error the general path reports.
	uaAt, uaEnd := refEnd+3, len(line)-1
	if uaEnd < uaAt || line[uaEnd] != '"' || escaped(line[uaAt:uaEnd]) ||
		bytes.IndexByte(line[uaAt:uaEnd], '"') >= 0 && !jsonQuotesEscaped(line[uaAt:uaEnd]) {
		return false
	}

	// The line is accepted: from here on nothing fails. Most lines hold no
	// escape at all, which one scan tells for every field.
	e.IP = ip.Unmap()
	e.Time = t
	e.Status = int(status)
	e.BytesSent = int64(sent)
	escaped := bytes.IndexByte(line[userAt:], '\\') >= 0
	unescape := func(b []byte) []byte {
		if escaped {
			return unescapeDefault(b)
		}
		return b
	}
	if user := line[userAt:userEnd]; !absent(user) {
		e.Vars = append(e.Vars, characteristics.Field{Name: f.vars[cUser].key, Value: str(unescape(user))})
	}
	if req := line[reqAt:reqEnd]; absent(req) {
		e.Vars = append(e.Vars, characteristics.Field{Name: f.vars[cRequest].name, Value: str(req)})
	} else if s := str(unescape(req)); !parseRequest(s, e) {
		e.Vars = append(e.Vars, characteristics.Field{Name: f.vars[cRequest].name, Value: s})
	}
	if ref := line[refAt:refEnd]; !absent(ref) {
		s := str(unescape(ref))
		e.Headers = append(e.Headers, characteristics.Field{Name: f.vars[cReferer].key, Value: s})
		e.Referer = s
	}
	if ua := line[uaAt:uaEnd]; !absent(ua) {
		s := str(unescape(ua))
		e.Headers = append(e.Headers, characteristics.Field{Name: f.vars[cUserAgent].key, Value: s})
		e.UserAgent = s
	}
	return true
}

// Cache remembers what the lines a goroutine parses with ParseCache tend to
// repeat. A log's lines come in time order, many to a second, so most repeat
// the time of the line before; and a client makes its requests in bursts (a
// page and its assets), so most addresses were seen a few lines before. It
// keeps the last $time_local and, in a direct-mapped table, the addresses
// that are not plain dotted IPv4 (which parse about as fast as they are
// looked up): IPv6 costs several times more to parse than to look up. A
// lookup that misses (a new address every line, or addresses crafted to
// share a slot) costs a hash, a comparison and a copy over the parse. The
// zero value is empty; a Cache is not safe for concurrent use.
type Cache struct {
	text  [26]byte
	t     time.Time
	ok    bool
	addrs [addrSlots]addrSlot
}

const (
	addrSlots   = 256 // a power of two
	addrMaxText = 47  // the longest address text remembered (IPv6 with an IPv4 tail is 45)
)

type addrSlot struct {
	tail uint64 // the last eight bytes of text: most misses end on it
	n    uint8  // length of text; 0: empty
	text [addrMaxText]byte
	addr netip.Addr
}

// addr is parseAddr through c (nil: none).
func (c *Cache) addr(b []byte) (netip.Addr, bool) {
	if c == nil || len(b) < 8 || len(b) > addrMaxText {
		return parseAddr(b)
	}
	// The last eight bytes differ between the addresses of a network; the
	// slot is only a guess, the comparison decides.
	tail := binary.LittleEndian.Uint64(b[len(b)-8:])
	s := &c.addrs[((tail^uint64(len(b)))*0x9e3779b97f4a7c15)>>(64-8)&(addrSlots-1)]
	if s.tail == tail && int(s.n) == len(b) && string(s.text[:s.n]) == string(b) {
		return s.addr, true
	}
	a, ok := parseAddr(b)
	if ok {
		s.n = uint8(copy(s.text[:], b))
		s.tail, s.addr = tail, a
	}
	return a, ok
}

// parse is parseTimeLocal through c (nil: none).
func (c *Cache) parse(b []byte) (time.Time, bool) {
	if c == nil {
		return parseTimeLocal(b)
	}
	// Compared as words, the one with the seconds first: a call costs
	// more than the comparison.
	if c.ok && len(b) == len(c.text) &&
		binary.LittleEndian.Uint64(b[16:]) == binary.LittleEndian.Uint64(c.text[16:]) &&
		binary.LittleEndian.Uint64(b[8:]) == binary.LittleEndian.Uint64(c.text[8:]) &&
		binary.LittleEndian.Uint64(b) == binary.LittleEndian.Uint64(c.text[:]) &&
		binary.LittleEndian.Uint16(b[24:]) == binary.LittleEndian.Uint16(c.text[24:]) {
		return c.t, true
	}
	t, ok := parseTimeLocal(b)
	if ok && len(b) == len(c.text) {
		copy(c.text[:], b)
		c.t, c.ok = t, true
	}
	return t, ok
}

// skipDigits returns the index of the first byte at or after i that is not a
// decimal digit, or len(b).
func skipDigits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

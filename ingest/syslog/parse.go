package syslog

import (
	"bytes"
	"errors"
)

// Format is the header format of a message.
type Format uint8

// Formats of Message.Format.
const (
	FormatUnknown Format = iota
	FormatRFC3164        // <PRI>Mmm dd hh:mm:ss HOST TAG: MSG (what nginx writes)
	FormatRFC5424        // <PRI>1 TIMESTAMP HOST APP PROCID MSGID SD MSG
)

func (f Format) String() string {
	switch f {
	case FormatRFC3164:
		return "rfc3164"
	case FormatRFC5424:
		return "rfc5424"
	}
	return "unknown"
}

// Message is one parsed syslog message. Its slices point into the bytes
// given to Parse and are valid as long as they are.
type Message struct {
	Format   Format
	Priority int    // facility*8 + severity
	Time     []byte // the header's timestamp as written
	Host     []byte // HOSTNAME, empty when the sender left it out ("-" in RFC 5424)
	Tag      []byte // the TAG of RFC 3164 (without [pid]), APP-NAME of RFC 5424
	Msg      []byte // what follows the header: for nginx, the access log line
}

// Errors of Parse, preallocated: a malformed message costs no allocation.
var (
	ErrEmpty     = errors.New("syslog: empty message")
	ErrPriority  = errors.New("syslog: no <PRI> (want <0> to <191>)")
	ErrTimestamp = errors.New("syslog: bad timestamp (want Mmm dd hh:mm:ss, or RFC 5424's)")
	ErrHeader    = errors.New("syslog: header cut short")
	ErrTag       = errors.New("syslog: no TAG: before the message")
	ErrSD        = errors.New("syslog: bad STRUCTURED-DATA")
)

// Parse parses one message (one datagram, or one frame of a stream) into m.
// It recognises RFC 5424 by its version "1" after <PRI>, and otherwise reads
// RFC 3164 as nginx and logger(1) write it: a timestamp "Mmm dd hh:mm:ss",
// then HOSTNAME (which may be absent, as with nginx's nohostname), then
// TAG, optionally [PID], and ": ". A trailing newline is not part of Msg.
// Parse never panics and does not allocate.
func Parse(b []byte, m *Message) error {
	*m = Message{}
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == 0) {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return ErrEmpty
	}
	pri, rest, ok := priority(b)
	if !ok {
		return ErrPriority
	}
	m.Priority = pri
	if len(rest) >= 2 && rest[0] == '1' && rest[1] == ' ' {
		m.Format = FormatRFC5424
		return parse5424(rest[2:], m)
	}
	m.Format = FormatRFC3164
	return parse3164(rest, m)
}

// priority reads "<PRI>": one to three digits, no leading zero but for
// "<0>", at most 191.
func priority(b []byte) (int, []byte, bool) {
	if len(b) < 3 || b[0] != '<' {
		return 0, nil, false
	}
	v, i := 0, 1
	for ; i < len(b) && i <= 4 && b[i] >= '0' && b[i] <= '9'; i++ {
		v = v*10 + int(b[i]-'0')
	}
	digits := i - 1
	if digits == 0 || digits > 3 || i >= len(b) || b[i] != '>' || v > 191 || (digits > 1 && b[1] == '0') {
		return 0, nil, false
	}
	return v, b[i+1:], true
}

var months = [12]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// stamp3164 reports whether b starts with "Mmm dd hh:mm:ss" (day padded
// with a space or, leniently, a zero).
func stamp3164(b []byte) bool {
	if len(b) < 15 {
		return false
	}
	month := false
	for _, mo := range months {
		if string(b[:3]) == mo {
			month = true
			break
		}
	}
	digit := func(c byte) bool { return c >= '0' && c <= '9' }
	return month && b[3] == ' ' && (b[4] == ' ' || digit(b[4])) && digit(b[5]) && b[6] == ' ' &&
		digit(b[7]) && digit(b[8]) && b[9] == ':' && digit(b[10]) && digit(b[11]) && b[12] == ':' &&
		digit(b[13]) && digit(b[14])
}

func parse3164(b []byte, m *Message) error {
	if !stamp3164(b) {
		return ErrTimestamp
	}
	m.Time = b[:15]
	b = b[15:]
	if len(b) == 0 || b[0] != ' ' {
		return ErrHeader
	}
	b = b[1:]
	// The first word is HOSTNAME, unless it is already the tag: it ends
	// with ':' or holds '[' (nginx's nohostname, glibc's syslog(3)).
	sp := bytes.IndexByte(b, ' ')
	if sp < 0 {
		return ErrTag
	}
	first := b[:sp]
	if !isTag(first) {
		m.Host = first
		b = b[sp+1:]
	}
	// TAG[PID]: MSG
	end := bytes.IndexAny(b, ":[ ")
	if end <= 0 {
		return ErrTag
	}
	m.Tag = b[:end]
	b = b[end:]
	if b[0] == '[' {
		j := bytes.IndexByte(b, ']')
		if j < 0 {
			return ErrTag
		}
		b = b[j+1:]
	}
	if len(b) == 0 || b[0] != ':' {
		return ErrTag
	}
	b = b[1:]
	if len(b) > 0 && b[0] == ' ' {
		b = b[1:]
	}
	m.Msg = b
	return nil
}

// isTag reports whether a header's word after the timestamp is a TAG
// rather than a HOSTNAME.
func isTag(w []byte) bool {
	return len(w) > 0 && (w[len(w)-1] == ':' || bytes.IndexByte(w, '[') >= 0)
}

// field cuts b's next space-ended header field of at most max bytes of
// printable ASCII; "-" gives an empty field.
func field(b []byte, max int) (f, rest []byte, err error) {
	sp := bytes.IndexByte(b, ' ')
	if sp <= 0 || sp > max {
		return nil, nil, ErrHeader
	}
	for _, c := range b[:sp] {
		if c < 33 || c > 126 {
			return nil, nil, ErrHeader
		}
	}
	f, rest = b[:sp], b[sp+1:]
	if len(f) == 1 && f[0] == '-' {
		f = nil
	}
	return f, rest, nil
}

func parse5424(b []byte, m *Message) error {
	var err error
	if m.Time, b, err = field(b, 64); err != nil {
		return ErrTimestamp
	}
	if m.Host, b, err = field(b, 255); err != nil {
		return err
	}
	if m.Tag, b, err = field(b, 48); err != nil {
		return err
	}
	if _, b, err = field(b, 128); err != nil { // PROCID
		return err
	}
	if _, b, err = field(b, 32); err != nil { // MSGID
		return err
	}
	// STRUCTURED-DATA: "-" or one or more [ID PARAM="VALUE" ...], values
	// escaping '"', '\' and ']' with '\'.
	switch {
	case len(b) > 0 && b[0] == '-':
		b = b[1:]
	case len(b) > 0 && b[0] == '[':
		for len(b) > 0 && b[0] == '[' {
			i, quoted := 1, false
			for ; i < len(b); i++ {
				c := b[i]
				if quoted && c == '\\' {
					i++
					continue
				}
				if c == '"' {
					quoted = !quoted
				} else if c == ']' && !quoted {
					break
				}
			}
			if i >= len(b) {
				return ErrSD
			}
			b = b[i+1:]
		}
	default:
		return ErrSD
	}
	if len(b) > 0 {
		if b[0] != ' ' {
			return ErrSD
		}
		b = b[1:]
	}
	m.Msg = bytes.TrimPrefix(b, bom)
	return nil
}

// bom is the UTF-8 byte order mark RFC 5424 allows before MSG.
var bom = []byte("\xef\xbb\xbf")

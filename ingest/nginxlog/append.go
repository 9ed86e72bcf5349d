package nginxlog

import (
	"strconv"
	"strings"
	"time"

	"github.com/guardd/guardd/characteristics"
)

// Append appends e to dst as nginx would log it with f, without a newline:
// absent values as "-", times in UTC, values escaped as f's escape says. It is
// the inverse of Parse for the fields Parse fills, and serves tests, benchmarks
// and generated logs; it is not on a hot path.
func (f *Format) Append(dst []byte, e *characteristics.Event) []byte {
	dst = append(dst, f.lead...)
	for i := range f.vars {
		v := &f.vars[i]
		start := len(dst)
		dst = f.appendValue(dst, v, e)
		if len(dst) == start {
			dst = append(dst, '-')
		}
		dst = append(dst, v.after...)
	}
	return dst
}

func (f *Format) appendValue(dst []byte, v *variable, e *characteristics.Event) []byte {
	switch v.kind {
	case kRemoteAddr:
		if e.IP.IsValid() {
			return e.IP.AppendTo(dst)
		}
		return f.appendString(dst, varOf(e, v.name))
	case kRemotePort:
		if e.Port != 0 {
			return strconv.AppendUint(dst, uint64(e.Port), 10)
		}
	case kTimeLocal:
		if !e.Time.IsZero() {
			return e.Time.UTC().AppendFormat(dst, "02/Jan/2006:15:04:05 -0700")
		}
	case kTimeISO:
		if !e.Time.IsZero() {
			return e.Time.UTC().AppendFormat(dst, "2006-01-02T15:04:05-07:00")
		}
	case kMsec:
		if !e.Time.IsZero() {
			t := e.Time.Truncate(time.Millisecond)
			dst = strconv.AppendInt(dst, t.Unix(), 10)
			ms := t.Nanosecond() / 1e6
			return append(dst, '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
		}
	case kRequest:
		if e.Method == "" {
			return f.appendString(dst, varOf(e, v.name))
		}
		var b strings.Builder
		b.WriteString(e.Method)
		b.WriteByte(' ')
		b.WriteString(e.Path)
		if e.Query != "" {
			b.WriteByte('?')
			b.WriteString(e.Query)
		}
		if e.Protocol != "" {
			b.WriteByte(' ')
			b.WriteString(e.Protocol)
		}
		return f.appendString(dst, b.String())
	case kMethod:
		return f.appendString(dst, e.Method)
	case kRequestURI:
		dst = f.appendString(dst, e.Path)
		if e.Query != "" {
			dst = append(dst, '?')
			dst = f.appendString(dst, e.Query)
		}
		return dst
	case kURI:
		return f.appendString(dst, e.Path)
	case kArgs:
		return f.appendString(dst, e.Query)
	case kProtocol:
		return f.appendString(dst, e.Protocol)
	case kStatus:
		return strconv.AppendInt(dst, int64(e.Status), 10)
	case kBytesSent:
		return strconv.AppendInt(dst, e.BytesSent, 10)
	case kRequestTime:
		return strconv.AppendFloat(dst, e.RequestTime, 'f', 3, 64)
	case kHost:
		return f.appendString(dst, e.Host)
	case kHeader:
		if h, ok := e.Header(v.key); ok {
			return f.appendString(dst, h)
		}
		switch v.also {
		case kReferer:
			return f.appendString(dst, e.Referer)
		case kUserAgent:
			return f.appendString(dst, e.UserAgent)
		case kHost:
			return f.appendString(dst, e.Host)
		case kCookieHeader:
			for i, c := range e.Cookies {
				if i > 0 {
					dst = append(dst, ';', ' ')
				}
				dst = f.appendString(dst, c.Name+"="+c.Value)
			}
			return dst
		}
	case kCookie:
		c, _ := e.Cookie(v.key)
		return f.appendString(dst, c)
	case kSNI:
		return f.appendString(dst, e.TLS.SNI)
	case kALPN:
		return f.appendString(dst, e.TLS.ALPN)
	case kJA3:
		return f.appendString(dst, e.TLS.JA3)
	case kJA4:
		return f.appendString(dst, e.TLS.JA4)
	case kVar:
		return f.appendString(dst, varOf(e, v.key))
	}
	return dst
}

func varOf(e *characteristics.Event, name string) string {
	s, _ := e.Var(name)
	return s
}

const hexDigits = "0123456789ABCDEF"

// appendString appends s escaped as nginx's escape= says.
func (f *Format) appendString(dst []byte, s string) []byte {
	switch f.escape {
	case EscapeNone:
		return append(dst, s...)
	case EscapeJSON:
		for i := 0; i < len(s); i++ {
			switch c := s[i]; c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				if c < 0x20 {
					dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
				} else {
					dst = append(dst, c)
				}
			}
		}
		return dst
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '"' || c == '\\' || c < 0x20 || c >= 0x7f {
			dst = append(dst, '\\', 'x', hexDigits[c>>4], hexDigits[c&15])
		} else {
			dst = append(dst, c)
		}
	}
	return dst
}

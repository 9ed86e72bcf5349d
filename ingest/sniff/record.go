package sniff

import (
	"net/netip"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/guardd/guardd/characteristics/tlsfp"
)

// Protocols of a Record.
const (
	ProtoTLS  = "tls"
	ProtoQUIC = "quic"
	ProtoHTTP = "http"
)

// Record is one fingerprinted message: a TLS ClientHello over TCP, a QUIC
// ClientHello from Initial packets, or an HTTP/1.x request. Src is always the
// client. A Record passed to an emit callback is valid only during the call;
// copy it to keep it (its strings are owned by the Record and safe to keep).
type Record struct {
	Proto      string // ProtoTLS, ProtoQUIC or ProtoHTTP
	Frame      int    // 1-based index of the packet that completed the message
	Time       time.Time
	Src        netip.Addr
	SrcPort    uint16
	Dst        netip.Addr
	DstPort    uint16
	HelloIndex int // tls/quic: 1-based position of the hello in its flow

	tlsfp.Fingerprint // tls/quic

	Method, Path, JA4H, JA4HR string // http

	// plain is fingerprint text that FormatFile's worker knows needs no
	// JSON escaping (tlsfp.Text.Plain): AppendJSON copies the fields that
	// lie in it as they are. A field set to any other string is escaped.
	plain string
}

// AppendJSON appends r as one JSON object (no newline) with exactly the keys of
// the `guardd fingerprint --json` contract.
func (r *Record) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"proto":`...)
	dst = appendJSONString(dst, r.Proto)
	dst = append(dst, `,"frame":`...)
	dst = strconv.AppendInt(dst, int64(r.Frame), 10)
	dst = append(dst, `,"src":`...)
	dst = appendAddr(dst, r.Src)
	dst = append(dst, `,"src_port":`...)
	dst = strconv.AppendUint(dst, uint64(r.SrcPort), 10)
	dst = append(dst, `,"dst":`...)
	dst = appendAddr(dst, r.Dst)
	dst = append(dst, `,"dst_port":`...)
	dst = strconv.AppendUint(dst, uint64(r.DstPort), 10)
	if r.Proto == ProtoHTTP {
		dst = appendKV(dst, "method", r.Method)
		dst = appendKV(dst, "path", r.Path)
		dst = appendKV(dst, "ja4h", r.JA4H)
		dst = appendKV(dst, "ja4h_r", r.JA4HR)
		return append(dst, '}')
	}
	dst = appendKV(dst, "sni", r.SNI)
	dst = r.appendFP(dst, "ja3", r.JA3)
	dst = r.appendFP(dst, "ja3_hash", r.JA3Hash)
	dst = r.appendFP(dst, "ja3n", r.JA3N)
	dst = r.appendFP(dst, "ja3n_hash", r.JA3NHash)
	dst = r.appendFP(dst, "ja4", r.JA4)
	dst = r.appendFP(dst, "ja4_r", r.JA4R)
	dst = r.appendFP(dst, "ja4_o", r.JA4O)
	dst = r.appendFP(dst, "ja4_ro", r.JA4RO)
	dst = append(dst, `,"hello_index":`...)
	dst = strconv.AppendInt(dst, int64(r.HelloIndex), 10)
	return append(dst, '}')
}

// appendFP appends a fingerprint field like appendKV, without looking for
// bytes to escape when v is part of r.plain.
func (r *Record) appendFP(dst []byte, k, v string) []byte {
	if !inside(v, r.plain) {
		return appendKV(dst, k, v)
	}
	dst = append(dst, ',', '"')
	dst = append(dst, k...)
	dst = append(dst, '"', ':', '"')
	dst = append(dst, v...)
	return append(dst, '"')
}

// inside reports whether the bytes of s are inside those of t.
func inside(s, t string) bool {
	if len(s) == 0 || len(t) == 0 {
		return false
	}
	p, q := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(t)))
	return p >= q && p+uintptr(len(s)) <= q+uintptr(len(t))
}

func appendKV(dst []byte, k, v string) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, k...)
	dst = append(dst, '"', ':')
	return appendJSONString(dst, v)
}

func appendAddr(dst []byte, a netip.Addr) []byte {
	dst = append(dst, '"')
	if a.IsValid() {
		dst = a.AppendTo(dst)
	}
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Invalid UTF-8 (an SNI or a path
// is attacker-controlled bytes) becomes U+FFFD, as encoding/json does, so every
// line is valid JSON. Runs of eight bytes that need no escaping (fingerprints
// are all such bytes) are copied without looking at each byte.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if i = skipPlain(s, i); i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != 0x7f {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// skipPlain returns i advanced over the words of eight bytes that need no
// escaping.
func skipPlain(s string, i int) int {
	for ; i+8 <= len(s) && plain8(load64(s, i)); i += 8 {
	}
	return i
}

// load64 reads the eight bytes of s at i, little-endian (one load on amd64).
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plain8 reports whether none of the eight bytes in x needs escaping or UTF-8
// checking: each is in 0x20–0x7e and is neither '"' nor '\\'. Each term is
// non-zero exactly when some byte matches (borrows and carries may mark more
// bytes, but only next to a byte that does).
func plain8(x uint64) bool {
	q, b := x^'"'*ones, x^'\\'*ones
	bad := (x | (x + ones)) & highs     // >= 0x7f (0xff carries, but is >= 0x80 itself)
	bad |= (x - 0x20*ones) &^ x & highs // < 0x20
	bad |= (q - ones) &^ q & highs      // '"'
	bad |= (b - ones) &^ b & highs      // '\\'
	return bad == 0
}

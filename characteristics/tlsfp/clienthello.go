package tlsfp

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/crypto/cryptobyte"
)

// MaxHelloLen caps a ClientHello handshake message (header included).
// Post-quantum hellos are 1.2–2 KiB; nothing legitimate comes near this.
const MaxHelloLen = 64 << 10

// Extension types the fingerprints read.
const (
	extServerName          = 0x0000
	extSupportedGroups     = 0x000a
	extECPointFormats      = 0x000b
	extSignatureAlgorithms = 0x000d
	extALPN                = 0x0010
	extSupportedVersions   = 0x002b
)

// ErrMalformed is wrapped by every parse error: the bytes are not a
// well-formed ClientHello.
var ErrMalformed = errors.New("malformed client hello")

// ClientHello holds the fields of one ClientHello that JA3 and JA4 use, in wire
// order and with GREASE values kept (Compute drops them).
//
// ParseClientHello reuses the slices of the ClientHello it is given, so a
// ClientHello kept in a per-flow or per-goroutine struct parses without
// allocating. SNI and ALPN point into the ClientHello's own buffer and are
// valid until the next parse into the same ClientHello.
type ClientHello struct {
	// LegacyVersion is client_version, the two bytes after the handshake
	// header (never the record-layer version).
	LegacyVersion uint16
	// Ciphers are the cipher suites, Extensions the extension types (all
	// occurrences), SupportedVersions, Groups and SigAlgs the entries of the
	// first supported_versions (43), supported_groups (10) and
	// signature_algorithms (13) extensions.
	Ciphers, Extensions, SupportedVersions, Groups, SigAlgs []uint16
	// PointFormats are the bytes of the first ec_point_formats (11) extension.
	PointFormats []uint8
	// HasSNI reports an SNI extension (0), whatever it contains; SNI is its
	// first host_name, or "".
	HasSNI bool
	SNI    string
	// HasALPN reports an ALPN extension (16); ALPN is its first protocol
	// name, raw, or nil when the list is empty.
	HasALPN bool
	ALPN    []byte
	// HasSupportedVersions reports a supported_versions extension, even one
	// holding only GREASE (which gives JA4 version "00").
	HasSupportedVersions bool
	// SSLv2 marks a hello parsed by ParseSSLv2Hello: no extensions, no JA3.
	SSLv2 bool

	strbuf []byte // backing store of SNI and ALPN
}

func (ch *ClientHello) reset() {
	ch.LegacyVersion = 0
	ch.Ciphers = ch.Ciphers[:0]
	ch.Extensions = ch.Extensions[:0]
	ch.SupportedVersions = ch.SupportedVersions[:0]
	ch.Groups = ch.Groups[:0]
	ch.SigAlgs = ch.SigAlgs[:0]
	ch.PointFormats = ch.PointFormats[:0]
	ch.HasSNI, ch.SNI = false, ""
	ch.HasALPN, ch.ALPN = false, nil
	ch.HasSupportedVersions = false
	ch.SSLv2 = false
	ch.strbuf = ch.strbuf[:0]
}

// CopyTo makes dst a copy of ch that shares no memory with it, reusing
// dst's slices, so a hello can be fingerprinted on another goroutine while
// ch parses the next one. It does not allocate once dst's buffers have grown.
func (ch *ClientHello) CopyTo(dst *ClientHello) {
	dst.LegacyVersion = ch.LegacyVersion
	dst.Ciphers = append(dst.Ciphers[:0], ch.Ciphers...)
	dst.Extensions = append(dst.Extensions[:0], ch.Extensions...)
	dst.SupportedVersions = append(dst.SupportedVersions[:0], ch.SupportedVersions...)
	dst.Groups = append(dst.Groups[:0], ch.Groups...)
	dst.SigAlgs = append(dst.SigAlgs[:0], ch.SigAlgs...)
	dst.PointFormats = append(dst.PointFormats[:0], ch.PointFormats...)
	dst.HasSNI, dst.HasALPN = ch.HasSNI, ch.HasALPN
	dst.HasSupportedVersions, dst.SSLv2 = ch.HasSupportedVersions, ch.SSLv2
	dst.strbuf = append(dst.strbuf[:0], ch.SNI...)
	dst.strbuf = append(dst.strbuf, ch.ALPN...)
	dst.SNI, dst.ALPN = "", nil
	if n := len(ch.SNI); n > 0 {
		dst.SNI = unsafe.String(&dst.strbuf[0], n)
	}
	if ch.ALPN != nil {
		n := len(ch.SNI)
		dst.ALPN = dst.strbuf[n:len(dst.strbuf):len(dst.strbuf)]
	}
}

func malformed(where string) error {
	return fmt.Errorf("tlsfp: %s: %w", where, ErrMalformed)
}

// ParseClientHello parses msg, one whole handshake message (type 0x01, a
// 3-byte length, then the body, and nothing after it), into ch. Every nested
// length must be consistent and msg must not exceed MaxHelloLen. On error ch
// holds a partial parse and must not be fingerprinted.
func ParseClientHello(msg []byte, ch *ClientHello) error {
	ch.reset()
	if len(msg) > MaxHelloLen {
		return malformed("hello longer than 64 KiB")
	}
	if cap(ch.strbuf) < len(msg) {
		ch.strbuf = make([]byte, 0, max(len(msg), 512))
	}
	s := cryptobyte.String(msg)
	var typ uint8
	var body cryptobyte.String
	if !s.ReadUint8(&typ) || typ != 0x01 {
		return malformed("not a client hello")
	}
	if !s.ReadUint24LengthPrefixed(&body) || !s.Empty() {
		return malformed("handshake length")
	}
	var sessionID, ciphers, compression cryptobyte.String
	if !body.ReadUint16(&ch.LegacyVersion) || !body.Skip(32) {
		return malformed("version and random")
	}
	// Session IDs over 32 bytes and an empty compression list break RFC 8446
	// but not the framing: they are fingerprinted like any other hello.
	if !body.ReadUint8LengthPrefixed(&sessionID) {
		return malformed("session id")
	}
	if !body.ReadUint16LengthPrefixed(&ciphers) || len(ciphers)%2 != 0 {
		return malformed("cipher suites")
	}
	for !ciphers.Empty() {
		var c uint16
		ciphers.ReadUint16(&c)
		ch.Ciphers = append(ch.Ciphers, c)
	}
	if !body.ReadUint8LengthPrefixed(&compression) {
		return malformed("compression methods")
	}
	if body.Empty() {
		return nil // a hello may end after the compression methods
	}
	var exts cryptobyte.String
	if !body.ReadUint16LengthPrefixed(&exts) || !body.Empty() {
		return malformed("extensions length")
	}
	var seen uint8 // first-occurrence bits for the extensions we read
	const (
		seenSNI = 1 << iota
		seenGroups
		seenPoints
		seenSigAlgs
		seenALPN
		seenVersions
	)
	for !exts.Empty() {
		var typ uint16
		var data cryptobyte.String
		if !exts.ReadUint16(&typ) || !exts.ReadUint16LengthPrefixed(&data) {
			return malformed("extension header")
		}
		ch.Extensions = append(ch.Extensions, typ)
		switch typ {
		case extServerName:
			if seen&seenSNI == 0 {
				seen |= seenSNI
				ch.HasSNI = true
				ch.parseSNI(data) // SNI counts whatever it holds
			}
		case extSupportedGroups:
			if seen&seenGroups == 0 {
				seen |= seenGroups
				if !readU16List(&ch.Groups, data, false) {
					return malformed("supported_groups")
				}
			}
		case extECPointFormats:
			if seen&seenPoints == 0 {
				seen |= seenPoints
				var l cryptobyte.String
				if !data.ReadUint8LengthPrefixed(&l) || !data.Empty() {
					return malformed("ec_point_formats")
				}
				ch.PointFormats = append(ch.PointFormats, l...)
			}
		case extSignatureAlgorithms:
			if seen&seenSigAlgs == 0 {
				seen |= seenSigAlgs
				if !readU16List(&ch.SigAlgs, data, false) {
					return malformed("signature_algorithms")
				}
			}
		case extALPN:
			if seen&seenALPN == 0 {
				seen |= seenALPN
				if !ch.parseALPN(data) {
					return malformed("alpn")
				}
			}
		case extSupportedVersions:
			if seen&seenVersions == 0 {
				seen |= seenVersions
				ch.HasSupportedVersions = true
				if !readU16List(&ch.SupportedVersions, data, true) {
					return malformed("supported_versions")
				}
			}
		}
	}
	return nil
}

// readU16List reads a length-prefixed list of uint16 (u8 prefix when short,
// else u16) that must fill data exactly.
func readU16List(dst *[]uint16, data cryptobyte.String, short bool) bool {
	var l cryptobyte.String
	if short {
		if !data.ReadUint8LengthPrefixed(&l) {
			return false
		}
	} else if !data.ReadUint16LengthPrefixed(&l) {
		return false
	}
	if !data.Empty() || len(l)%2 != 0 {
		return false
	}
	for !l.Empty() {
		var v uint16
		l.ReadUint16(&v)
		*dst = append(*dst, v)
	}
	return true
}

// parseSNI takes the first host_name of a server_name_list, if the list is
// well formed. A malformed or empty SNI still counts as present (JA4 'd').
func (ch *ClientHello) parseSNI(data cryptobyte.String) {
	var list cryptobyte.String
	if !data.ReadUint16LengthPrefixed(&list) || !data.Empty() {
		return
	}
	for !list.Empty() {
		var typ uint8
		var name cryptobyte.String
		if !list.ReadUint8(&typ) || !list.ReadUint16LengthPrefixed(&name) {
			return
		}
		if typ == 0 {
			ch.SNI = ch.keep(name)
			return
		}
	}
}

func (ch *ClientHello) parseALPN(data cryptobyte.String) bool {
	var list cryptobyte.String
	if !data.ReadUint16LengthPrefixed(&list) || !data.Empty() {
		return false
	}
	ch.HasALPN = true
	first := true
	for !list.Empty() {
		var name cryptobyte.String
		if !list.ReadUint8LengthPrefixed(&name) {
			return false
		}
		if first {
			first = false
			start := len(ch.strbuf)
			ch.strbuf = append(ch.strbuf, name...)
			ch.ALPN = ch.strbuf[start:len(ch.strbuf):len(ch.strbuf)]
		}
	}
	return true
}

// keep copies b into ch's own buffer and returns it as a string that stays
// valid until the next parse into ch. ParseClientHello sizes the buffer to the
// message first, so appends never move it during one parse.
func (ch *ClientHello) keep(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	start := len(ch.strbuf)
	ch.strbuf = append(ch.strbuf, b...)
	return unsafe.String(&ch.strbuf[start], len(b))
}

// ParseSSLv2Hello parses an SSLv2-compatible CLIENT-HELLO record (2-byte
// header with the top bit set, msg_type 1, version, three lengths, 3-byte
// cipher specs, session id, challenge). Specs whose first byte is 0 become
// 2-byte suites; the others are dropped. The record must be complete; bytes
// after it are ignored.
func ParseSSLv2Hello(rec []byte, ch *ClientHello) error {
	ch.reset()
	if len(rec) < 2 || rec[0]&0x80 == 0 {
		return malformed("sslv2: no 2-byte record header")
	}
	n := int(rec[0]&0x7f)<<8 | int(rec[1])
	if len(rec) < 2+n {
		return malformed("sslv2: truncated record")
	}
	s := cryptobyte.String(rec[2 : 2+n])
	var typ uint8
	var specLen, sidLen, chalLen uint16
	if !s.ReadUint8(&typ) || typ != 1 {
		return malformed("sslv2: not a client hello")
	}
	if !s.ReadUint16(&ch.LegacyVersion) || !s.ReadUint16(&specLen) ||
		!s.ReadUint16(&sidLen) || !s.ReadUint16(&chalLen) {
		return malformed("sslv2: header")
	}
	if specLen%3 != 0 || int(specLen)+int(sidLen)+int(chalLen) != len(s) {
		return malformed("sslv2: lengths")
	}
	if sidLen > 32 || chalLen < 16 || chalLen > 32 {
		return malformed("sslv2: session id or challenge length")
	}
	specs := s[:specLen]
	for i := 0; i < len(specs); i += 3 {
		if specs[i] == 0 {
			ch.Ciphers = append(ch.Ciphers, uint16(specs[i+1])<<8|uint16(specs[i+2]))
		}
	}
	ch.SSLv2 = true
	return nil
}

// LooksLikeSSLv2Hello reports whether b starts like an SSLv2-compatible
// CLIENT-HELLO record: 2-byte header with the top bit set, msg_type 1 and a
// version of SSL 2.0 to TLS 1.3. It needs the first 5 bytes.
func LooksLikeSSLv2Hello(b []byte) bool {
	if len(b) < 5 || b[0]&0x80 == 0 || b[2] != 1 {
		return false
	}
	n := int(b[0]&0x7f)<<8 | int(b[1])
	v := uint16(b[3])<<8 | uint16(b[4])
	return n >= 9+3+16 && (v == 0x0002 || (v >= 0x0300 && v <= 0x0304))
}

// ParseHello parses what a Scanner emits: a handshake message (first byte
// 0x01) with ParseClientHello, or an SSLv2-compatible record with
// ParseSSLv2Hello.
func ParseHello(b []byte, ch *ClientHello) error {
	if len(b) > 0 && b[0]&0x80 != 0 {
		return ParseSSLv2Hello(b, ch)
	}
	return ParseClientHello(b, ch)
}

package tlsfp

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
)

// Options changes how fingerprints are computed. The zero value follows the
// written specifications.
type Options struct {
	// LegacyALPN reproduces the ALPN characters of FoxIO's Rust tool from
	// before August 2024 (--ja4-alpn=legacy), so output can be compared with
	// it. It changes nothing else.
	LegacyALPN bool
}

// Fingerprint is every fingerprint of one ClientHello. For an SSLv2 hello the
// four JA3/JA3N fields are empty. ALPN is the first protocol name offered,
// raw (characteristic tls.alpn), or "".
type Fingerprint struct {
	SNI, JA3, JA3Hash, JA3N, JA3NHash, JA4, JA4R, JA4O, JA4RO string
	ALPN                                                      string
}

// IsGREASE reports whether v is one of the 16 GREASE values of RFC 8701
// (0x0a0a, 0x1a1a … 0xfafa).
func IsGREASE(v uint16) bool {
	return v&0x0f0f == 0x0a0a && v>>8 == v&0xff
}

const hexDigits = "0123456789abcdef"

// Compute fingerprints a parsed ClientHello. transport is 't' for TLS over
// TCP and 'q' for QUIC (it is JA4's first character).
//
// It allocates two strings: the short fields (SNI, ALPN, the hashes, JA4 and
// JA4_o) share one backing array and the long raw strings (JA3, JA3N, JA4_r,
// JA4_ro) another, so a caller that keeps only short ones (a join table) does
// not keep the long ones alive. AppendText computes the same without
// allocating.
func Compute(ch *ClientHello, transport byte, opts Options) Fingerprint {
	var buf [2560]byte
	b, t := AppendText(buf[:0], ch, transport, opts)
	return t.fingerprint(string(b[:t.split]), string(b[t.split:]), t.split)
}

// Text says where AppendText put each fingerprint of one ClientHello: byte
// offsets into the buffer it appended to.
type Text struct {
	ja3, ja3n, ja4r, ja4ro                  span // the long raw strings
	split                                   int  // where the short ones start
	ja3Hash, ja3nHash, ja4, ja4o, sni, alpn span
	plain                                   span // see Plain
}

type span struct{ start, end int }

// in returns the span of s, a string starting at offset base of the buffer.
func (sp span) in(s string, base int) string {
	if sp.start == sp.end {
		return "" // also the zero span of a field an SSLv2 hello lacks
	}
	return s[sp.start-base : sp.end-base]
}

// Fingerprint returns the fingerprints as substrings of s, which holds the
// buffer AppendText appended to (string(buf), or a string aliasing it for as
// long as the buffer is left unchanged). It does not allocate.
func (t *Text) Fingerprint(s string) Fingerprint { return t.fingerprint(s, s, 0) }

// fingerprint takes the long fields from long and the short ones from short,
// which starts at offset base of the buffer.
func (t *Text) fingerprint(long, short string, base int) Fingerprint {
	return Fingerprint{
		SNI: t.sni.in(short, base), ALPN: t.alpn.in(short, base),
		JA3: t.ja3.in(long, 0), JA3Hash: t.ja3Hash.in(short, base),
		JA3N: t.ja3n.in(long, 0), JA3NHash: t.ja3nHash.in(short, base),
		JA4: t.ja4.in(short, base), JA4R: t.ja4r.in(long, 0),
		JA4O: t.ja4o.in(short, base), JA4RO: t.ja4ro.in(long, 0),
	}
}

// AppendText appends the text of every fingerprint of ch to dst, as Compute
// computes them, and says where each one is. The long raw strings come first
// (JA3, JA3N, JA4_r, JA4_ro), then the hashes, JA4, JA4_o, SNI and ALPN. It
// does not allocate when dst has room (about 2 KiB for a browser's hello).
func AppendText(dst []byte, ch *ClientHello, transport byte, opts Options) ([]byte, Text) {
	var t Text
	// Non-GREASE ciphers and extensions in wire order, and sorted copies,
	// kept in stack arrays when small.
	var cs, es, css, ess [64]uint16
	ciphers := appendNonGREASE(cs[:0], ch.Ciphers)
	exts := appendNonGREASE(es[:0], ch.Extensions)
	sortedCiphers := sortU16(append(css[:0], ciphers...))
	sortedExts := sortU16(append(ess[:0], exts...))

	var a [10]byte
	a[0] = transport
	v := ja4Version(ch)
	a[1], a[2] = v[0], v[1]
	a[3] = 'i'
	if ch.HasSNI {
		a[3] = 'd'
	}
	put2(a[4:6], len(ciphers))
	put2(a[6:8], len(exts))
	a[8], a[9] = alpnChars(ch, opts.LegacyALPN)

	b := dst
	start := len(b)
	if !ch.SSLv2 {
		b = strconv.AppendUint(b, uint64(ch.LegacyVersion), 10)
		b = append(b, ',')
		b = appendDecList(b, ciphers)
		b = append(b, ',')
		extStart := len(b)
		b = appendDecList(b, exts)
		extEnd := len(b)
		b = append(b, ',')
		b = appendDecList(b, ch.Groups)
		b = append(b, ',')
		for i, p := range ch.PointFormats {
			if i > 0 {
				b = append(b, '-')
			}
			b = appendDec(b, uint16(p))
		}
		t.ja3 = span{start, len(b)}
		// JA3N differs from JA3 only in the order of the extensions.
		b = append(b, b[start:extStart]...)
		b = appendDecList(b, sortedExts)
		b = append(b, b[extEnd:t.ja3.end]...)
		t.ja3n = span{t.ja3.end, len(b)}
	}
	var bS, cS, bO, cO span
	t.ja4r.start = len(b)
	b, bS, cS = appendJA4Raw(b, &a, sortedCiphers, sortedExts, ch.SigAlgs, true)
	t.ja4r.end = len(b)
	t.ja4ro.start = len(b)
	b, bO, cO = appendJA4Raw(b, &a, ciphers, exts, ch.SigAlgs, false)
	t.ja4ro.end = len(b)

	t.split = len(b)
	if !ch.SSLv2 {
		b = appendMD5Hex(b, t.ja3)
		t.ja3Hash = span{t.split, len(b)}
		b = appendMD5Hex(b, t.ja3n)
		t.ja3nHash = span{t.ja3Hash.end, len(b)}
	}
	t.ja4.start = len(b)
	b = appendJA4(b, &a, bS, cS)
	t.ja4.end = len(b)
	b = appendJA4(b, &a, bO, cO)
	t.ja4o = span{t.ja4.end, len(b)}
	// Every byte so far is a digit, a hex digit, ',', '-', '_' or one of
	// part a's characters, which are plain unless --ja4-alpn=legacy copied
	// a quote or a backslash out of the ALPN.
	if !slices.Contains(a[:], '"') && !slices.Contains(a[:], '\\') {
		t.plain = span{start, len(b)}
	}
	b = append(b, ch.SNI...)
	t.sni = span{t.ja4o.end, len(b)}
	b = append(b, ch.ALPN...)
	t.alpn = span{t.sni.end, len(b)}
	return b, t
}

// Plain returns where, in the buffer AppendText appended to, every
// fingerprint but the SNI and ALPN is, when all of it is printable ASCII
// other than '"' and '\\' (so JSON needs no escape in it), and start == end
// otherwise. Only --ja4-alpn=legacy can make it not plain.
func (t *Text) Plain() (start, end int) { return t.plain.start, t.plain.end }

// ja4Len is the length of JA4 and JA4_o: part a, then two 12-digit hashes.
const ja4Len = 10 + 1 + 12 + 1 + 12

// appendJA4Raw appends a_b_c, where b is the ciphers in hex and c JA4's
// part-c input (see appendExtSig), and returns where b and c are in buf.
func appendJA4Raw(buf []byte, a *[10]byte, ciphers, exts, sigalgs []uint16, dropSNIALPN bool) ([]byte, span, span) {
	buf = append(buf, a[:]...)
	buf = append(buf, '_')
	b := span{start: len(buf)}
	buf = appendHex4List(buf, ciphers)
	b.end = len(buf)
	buf = append(buf, '_')
	c := span{start: len(buf)}
	buf = appendExtSig(buf, exts, sigalgs, dropSNIALPN)
	c.end = len(buf)
	return buf, b, c
}

// appendJA4 appends a_hash12(b)_hash12(c), where b and c are spans of buf.
func appendJA4(buf []byte, a *[10]byte, b, c span) []byte {
	hb, hc := hash12(buf[b.start:b.end]), hash12(buf[c.start:c.end])
	buf = append(buf, a[:]...)
	buf = append(buf, '_')
	buf = append(buf, hb[:]...)
	buf = append(buf, '_')
	return append(buf, hc[:]...)
}

// appendMD5Hex appends the MD5 of the span sp of buf, in hex.
func appendMD5Hex(buf []byte, sp span) []byte {
	sum := md5.Sum(buf[sp.start:sp.end])
	var h [32]byte
	hex.Encode(h[:], sum[:])
	return append(buf, h[:]...)
}

func appendNonGREASE(dst, vs []uint16) []uint16 {
	for _, v := range vs {
		if !IsGREASE(v) {
			dst = append(dst, v)
		}
	}
	return dst
}

// sortU16 sorts vs in place: insertion sort for the usual short lists.
func sortU16(vs []uint16) []uint16 {
	if len(vs) > 48 {
		slices.Sort(vs)
		return vs
	}
	for i := 1; i < len(vs); i++ {
		v := vs[i]
		j := i
		for ; j > 0 && vs[j-1] > v; j-- {
			vs[j] = vs[j-1]
		}
		vs[j] = v
	}
	return vs
}

// appendDecList writes the non-GREASE values in decimal, joined with '-'.
func appendDecList(buf []byte, vs []uint16) []byte {
	first := true
	for _, v := range vs {
		if IsGREASE(v) {
			continue
		}
		if !first {
			buf = append(buf, '-')
		}
		first = false
		buf = appendDec(buf, v)
	}
	return buf
}

// appendDec writes v in decimal.
func appendDec(buf []byte, v uint16) []byte {
	switch {
	case v < 10:
		return append(buf, byte('0'+v))
	case v < 100:
		return append(buf, byte('0'+v/10), byte('0'+v%10))
	case v < 1000:
		return append(buf, byte('0'+v/100), byte('0'+v/10%10), byte('0'+v%10))
	case v < 10000:
		return append(buf, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
	}
	return append(buf, byte('0'+v/10000), byte('0'+v/1000%10), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
}

func appendHex4(buf []byte, v uint16) []byte {
	return append(buf, hexDigits[v>>12], hexDigits[v>>8&0xf], hexDigits[v>>4&0xf], hexDigits[v&0xf])
}

func appendHex4List(buf []byte, vs []uint16) []byte {
	for i, v := range vs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendHex4(buf, v)
	}
	return buf
}

// appendExtSig writes JA4's part-c input: the extensions (without SNI and
// ALPN when dropSNIALPN), then '_' and the non-GREASE signature algorithms
// when there are any.
func appendExtSig(buf []byte, exts, sigalgs []uint16, dropSNIALPN bool) []byte {
	first := true
	for _, e := range exts {
		if dropSNIALPN && (e == extServerName || e == extALPN) {
			continue
		}
		if !first {
			buf = append(buf, ',')
		}
		first = false
		buf = appendHex4(buf, e)
	}
	first = true
	for _, s := range sigalgs {
		if IsGREASE(s) {
			continue
		}
		if first {
			buf = append(buf, '_')
			first = false
		} else {
			buf = append(buf, ',')
		}
		buf = appendHex4(buf, s)
	}
	return buf
}

// hash12 is the first 12 hex digits of SHA-256, or twelve zeros for empty
// input.
func hash12(b []byte) [12]byte {
	out := [12]byte{'0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0', '0'}
	if len(b) == 0 {
		return out
	}
	sum := sha256.Sum256(b)
	hex.Encode(out[:], sum[:6])
	return out
}

func put2(dst []byte, n int) {
	n = min(n, 99)
	dst[0] = byte('0' + n/10)
	dst[1] = byte('0' + n%10)
}

// ja4Version maps the highest non-GREASE supported_versions entry, or the
// legacy version when the extension is absent, to JA4's two characters.
func ja4Version(ch *ClientHello) string {
	v := ch.LegacyVersion
	if ch.HasSupportedVersions {
		v = 0
		for _, sv := range ch.SupportedVersions {
			if !IsGREASE(sv) && sv > v {
				v = sv
			}
		}
	}
	switch v {
	case 0x0304:
		return "13"
	case 0x0303:
		return "12"
	case 0x0302:
		return "11"
	case 0x0301:
		return "10"
	case 0x0300:
		return "s3"
	case 0x0002:
		return "s2"
	case 0xfeff:
		return "d1"
	case 0xfefd:
		return "d2"
	case 0xfefc:
		return "d3"
	}
	return "00"
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// alpnChars gives JA4's two ALPN characters from the first protocol name.
func alpnChars(ch *ClientHello, legacy bool) (byte, byte) {
	p := ch.ALPN
	n := len(p)
	if !ch.HasALPN || n == 0 {
		return '0', '0'
	}
	if legacy {
		first, last := byte('0'), byte('0')
		switch c := p[0]; {
		case c >= 0x20 && c <= 0x7e:
			first = c
		case c >= 0x80:
			first = '9'
		default:
			first = hexDigits[c>>4]
		}
		if n > 1 {
			switch c := p[n-1]; {
			case c >= 0x20 && c <= 0x7e:
				last = c
			case c >= 0x80:
				last = '9'
			default:
				last = hexDigits[c&0xf]
			}
		}
		return first, last
	}
	if isAlnum(p[0]) && isAlnum(p[n-1]) {
		return p[0], p[n-1]
	}
	return hexDigits[p[0]>>4], hexDigits[p[n-1]&0xf]
}

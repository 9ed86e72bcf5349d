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
// It allocates two strings (three with an uncommon ALPN): the short fields
// (SNI and the hashes) share one backing array and the long raw strings
// (JA3, JA3N, JA4_r, JA4_ro) another, so a caller that keeps only the short
// ones (a join table) does not keep the long ones alive.
func Compute(ch *ClientHello, transport byte, opts Options) Fingerprint {
	var fp Fingerprint
	fp.ALPN = alpnString(ch.ALPN)

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

	// The long strings, one after the other: JA3, JA3N, JA4_r, JA4_ro.
	var lb [2048]byte
	long := lb[:0]
	var ja3, ja3n [2]int // [start, end) in long
	if !ch.SSLv2 {
		long = strconv.AppendUint(long, uint64(ch.LegacyVersion), 10)
		long = append(long, ',')
		long = appendDecList(long, ciphers)
		long = append(long, ',')
		extStart := len(long)
		long = appendDecList(long, exts)
		extEnd := len(long)
		long = append(long, ',')
		long = appendDecList(long, ch.Groups)
		long = append(long, ',')
		for i, p := range ch.PointFormats {
			if i > 0 {
				long = append(long, '-')
			}
			long = appendDec(long, uint16(p))
		}
		ja3 = [2]int{0, len(long)}
		// JA3N differs from JA3 only in the order of the extensions.
		long = append(long, long[:extStart]...)
		long = appendDecList(long, sortedExts)
		long = append(long, long[extEnd:ja3[1]]...)
		ja3n = [2]int{ja3[1], len(long)}
	}
	var ja4r, ja4ro, bS, cS, bO, cO [2]int
	ja4r[0] = len(long)
	long, bS, cS = appendJA4Raw(long, &a, sortedCiphers, sortedExts, ch.SigAlgs, true)
	ja4r[1] = len(long)
	ja4ro[0] = len(long)
	long, bO, cO = appendJA4Raw(long, &a, ciphers, exts, ch.SigAlgs, false)
	ja4ro[1] = len(long)

	// The short strings: SNI, JA3 hash, JA3N hash, JA4, JA4_o.
	var sb [512]byte
	short := append(sb[:0], ch.SNI...)
	sni := len(short)
	if !ch.SSLv2 {
		short = appendMD5Hex(short, long[ja3[0]:ja3[1]])
		short = appendMD5Hex(short, long[ja3n[0]:ja3n[1]])
	}
	hashes := len(short)
	short = appendJA4(short, &a, long[bS[0]:bS[1]], long[cS[0]:cS[1]])
	short = appendJA4(short, &a, long[bO[0]:bO[1]], long[cO[0]:cO[1]])

	l, s := string(long), string(short)
	if !ch.SSLv2 {
		fp.JA3, fp.JA3N = l[ja3[0]:ja3[1]], l[ja3n[0]:ja3n[1]]
		fp.JA3Hash, fp.JA3NHash = s[sni:sni+32], s[sni+32:sni+64]
	}
	fp.JA4R, fp.JA4RO = l[ja4r[0]:ja4r[1]], l[ja4ro[0]:ja4ro[1]]
	fp.SNI = s[:sni]
	fp.JA4, fp.JA4O = s[hashes:hashes+ja4Len], s[hashes+ja4Len:hashes+2*ja4Len]
	return fp
}

// ja4Len is the length of JA4 and JA4_o: part a, then two 12-digit hashes.
const ja4Len = 10 + 1 + 12 + 1 + 12

// appendJA4Raw appends a_b_c, where b is the ciphers in hex and c JA4's
// part-c input (see appendExtSig), and returns where b and c are in buf.
func appendJA4Raw(buf []byte, a *[10]byte, ciphers, exts, sigalgs []uint16, dropSNIALPN bool) ([]byte, [2]int, [2]int) {
	buf = append(buf, a[:]...)
	buf = append(buf, '_')
	b0 := len(buf)
	buf = appendHex4List(buf, ciphers)
	b1 := len(buf)
	buf = append(buf, '_')
	c0 := len(buf)
	buf = appendExtSig(buf, exts, sigalgs, dropSNIALPN)
	return buf, [2]int{b0, b1}, [2]int{c0, len(buf)}
}

// appendJA4 appends a_hash12(b)_hash12(c).
func appendJA4(buf []byte, a *[10]byte, b, c []byte) []byte {
	hb, hc := hash12(b), hash12(c)
	buf = append(buf, a[:]...)
	buf = append(buf, '_')
	buf = append(buf, hb[:]...)
	buf = append(buf, '_')
	return append(buf, hc[:]...)
}

func appendMD5Hex(buf, b []byte) []byte {
	sum := md5.Sum(b)
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

// alpnString returns the common protocol names without allocating.
func alpnString(p []byte) string {
	switch string(p) {
	case "":
		return ""
	case "h2":
		return "h2"
	case "http/1.1":
		return "http/1.1"
	case "h3":
		return "h3"
	case "http/1.0":
		return "http/1.0"
	}
	return string(p)
}

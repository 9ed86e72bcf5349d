package tlsfp

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
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
// TCP and 'q' for QUIC (it is JA4's first character). It allocates only the
// strings it returns.
func Compute(ch *ClientHello, transport byte, opts Options) Fingerprint {
	var fp Fingerprint
	fp.SNI = strings.Clone(ch.SNI)
	fp.ALPN = alpnString(ch.ALPN)

	var scratch [1024]byte
	buf := scratch[:0]

	if !ch.SSLv2 {
		buf = appendJA3(buf[:0], ch, false)
		fp.JA3, fp.JA3Hash = md5Pair(buf)
		buf = appendJA3(buf[:0], ch, true)
		fp.JA3N, fp.JA3NHash = md5Pair(buf)
	}

	// Non-GREASE ciphers and extensions, kept in a stack array when small.
	var cs, es [128]uint16
	ciphers := cs[:0]
	for _, c := range ch.Ciphers {
		if !IsGREASE(c) {
			ciphers = append(ciphers, c)
		}
	}
	exts := es[:0]
	for _, e := range ch.Extensions {
		if !IsGREASE(e) {
			exts = append(exts, e)
		}
	}

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

	// Original order first, then sort in place for the sorted variants.
	var sb, sc [1024]byte
	bO := appendHex4List(sb[:0], ciphers)
	cO := appendExtSig(sc[:0], exts, ch.SigAlgs, false)
	hbO, hcO := hash12(bO), hash12(cO)
	fp.JA4RO = join3(buf[:0], a[:], bO, cO)

	slices.Sort(ciphers)
	slices.Sort(exts)
	bS := appendHex4List(bO[:0], ciphers)
	cS := appendExtSig(cO[:0], exts, ch.SigAlgs, true)
	hbS, hcS := hash12(bS), hash12(cS)
	fp.JA4R = join3(buf[:0], a[:], bS, cS)
	fp.JA4 = join3(buf[:0], a[:], hbS[:], hcS[:])
	fp.JA4O = join3(buf[:0], a[:], hbO[:], hcO[:])
	return fp
}

func join3(buf, a, b, c []byte) string {
	buf = append(buf, a...)
	buf = append(buf, '_')
	buf = append(buf, b...)
	buf = append(buf, '_')
	buf = append(buf, c...)
	return string(buf)
}

func md5Pair(b []byte) (string, string) {
	sum := md5.Sum(b)
	var h [32]byte
	hex.Encode(h[:], sum[:])
	return string(b), string(h[:])
}

// appendJA3 writes the JA3 string; sorted=true writes JA3N (extension types
// in ascending numeric order).
func appendJA3(buf []byte, ch *ClientHello, sorted bool) []byte {
	buf = strconv.AppendUint(buf, uint64(ch.LegacyVersion), 10)
	buf = append(buf, ',')
	buf = appendDecList(buf, ch.Ciphers)
	buf = append(buf, ',')
	if sorted {
		var es [128]uint16
		exts := append(es[:0], ch.Extensions...)
		slices.Sort(exts)
		buf = appendDecList(buf, exts)
	} else {
		buf = appendDecList(buf, ch.Extensions)
	}
	buf = append(buf, ',')
	buf = appendDecList(buf, ch.Groups)
	buf = append(buf, ',')
	for i, p := range ch.PointFormats {
		if i > 0 {
			buf = append(buf, '-')
		}
		buf = strconv.AppendUint(buf, uint64(p), 10)
	}
	return buf
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
		buf = strconv.AppendUint(buf, uint64(v), 10)
	}
	return buf
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

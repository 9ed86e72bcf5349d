package tlsfp

import (
	"encoding/hex"
	"strings"
	"testing"

	"golang.org/x/crypto/cryptobyte"
)

// helloSpec describes a ClientHello to build byte by byte.
type helloSpec struct {
	version    uint16
	ciphers    []uint16
	noExtBlock bool // end after the compression methods
	exts       []ext
}

type ext struct {
	typ  uint16
	data []byte
}

// build returns the handshake message (type 1, length, body).
func (h helloSpec) build(t testing.TB) []byte {
	t.Helper()
	var b cryptobyte.Builder
	b.AddUint8(1)
	b.AddUint24LengthPrefixed(func(b *cryptobyte.Builder) {
		b.AddUint16(h.version)
		b.AddBytes(make([]byte, 32))
		b.AddUint8LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(make([]byte, 32)) })
		b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
			for _, c := range h.ciphers {
				b.AddUint16(c)
			}
		})
		b.AddUint8LengthPrefixed(func(b *cryptobyte.Builder) { b.AddUint8(0) })
		if h.noExtBlock {
			return
		}
		b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
			for _, e := range h.exts {
				b.AddUint16(e.typ)
				b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(e.data) })
			}
		})
	})
	out, err := b.Bytes()
	if err != nil {
		t.Fatalf("build hello: %v", err)
	}
	return out
}

// record wraps a handshake message in one TLS record.
func record(typ byte, payload []byte) []byte {
	out := []byte{typ, 3, 1, byte(len(payload) >> 8), byte(len(payload))}
	return append(out, payload...)
}

func u16list(vs ...uint16) []byte {
	var b cryptobyte.Builder
	b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
		for _, v := range vs {
			b.AddUint16(v)
		}
	})
	return b.BytesOrPanic()
}

func u8u16list(vs ...uint16) []byte {
	var b cryptobyte.Builder
	b.AddUint8LengthPrefixed(func(b *cryptobyte.Builder) {
		for _, v := range vs {
			b.AddUint16(v)
		}
	})
	return b.BytesOrPanic()
}

func sniExt(name string) ext {
	var b cryptobyte.Builder
	b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
		b.AddUint8(0)
		b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes([]byte(name)) })
	})
	return ext{extServerName, b.BytesOrPanic()}
}

func alpnExt(names ...string) ext {
	var b cryptobyte.Builder
	b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) {
		for _, n := range names {
			b.AddUint8LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes([]byte(n)) })
		}
	})
	return ext{extALPN, b.BytesOrPanic()}
}

func groupsExt(vs ...uint16) ext   { return ext{extSupportedGroups, u16list(vs...)} }
func sigalgsExt(vs ...uint16) ext  { return ext{extSignatureAlgorithms, u16list(vs...)} }
func versionsExt(vs ...uint16) ext { return ext{extSupportedVersions, u8u16list(vs...)} }
func pointsExt(ps ...byte) ext     { return ext{extECPointFormats, append([]byte{byte(len(ps))}, ps...)} }
func empty(typ uint16) ext         { return ext{typ, nil} }

// fromHex decodes hex with optional spaces and newlines.
func fromHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatalf("hex: %v", err)
	}
	return b
}

// exts builds plain empty extensions of the given types.
func plainExts(types ...uint16) []ext {
	out := make([]ext, len(types))
	for i, typ := range types {
		out[i] = empty(typ)
	}
	return out
}

func hash12s(b []byte) string { h := hash12(b); return string(h[:]) }

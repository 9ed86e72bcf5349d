package quic

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
)

// QUIC versions whose Initial packets can be opened.
const (
	Version1 uint32 = 0x00000001 // RFC 9000
	Version2 uint32 = 0x6b3343cf // RFC 9369
)

// ErrUnknownVersion is returned for a version whose Initial keys are not
// known (gQUIC, future versions, Version Negotiation).
var ErrUnknownVersion = errors.New("unknown quic version")

// Packet kinds, independent of each version's type bits.
type kind uint8

const (
	kindInitial kind = iota
	kind0RTT
	kindHandshake
	kindRetry
)

type versionParams struct {
	salt   []byte
	prefix string // HKDF label prefix: "quic " or "quicv2 "
	v2     bool   // v2 type bits
}

var (
	saltV1      = []byte{0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a}
	saltV2      = []byte{0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6, 0xdb, 0x81, 0x93, 0x81, 0xbe, 0x6e, 0x26, 0x9d, 0xcb, 0xf9, 0xbd, 0x2e, 0xd9}
	saltDraft29 = []byte{0xaf, 0xbf, 0xec, 0x28, 0x99, 0x93, 0xd2, 0x4c, 0x9e, 0x97, 0x86, 0xf1, 0x9c, 0x61, 0x11, 0xe0, 0x43, 0x90, 0xa8, 0x99}
	saltDraft23 = []byte{0xc3, 0xee, 0xf7, 0x12, 0xc7, 0x2e, 0xbb, 0x5a, 0x11, 0xa7, 0xd2, 0x43, 0x2b, 0xb4, 0x63, 0x65, 0xbe, 0xf9, 0xf5, 0x02}
)

// params gives the Initial parameters of a version: v1, v2, and the IETF
// drafts 23 to 32.
func params(v uint32) (versionParams, bool) {
	switch {
	case v == Version1:
		return versionParams{saltV1, "quic ", false}, true
	case v == Version2:
		return versionParams{saltV2, "quicv2 ", true}, true
	case v >= 0xff00001d && v <= 0xff000020:
		return versionParams{saltDraft29, "quic ", false}, true
	case v >= 0xff000017 && v <= 0xff00001c:
		return versionParams{saltDraft23, "quic ", false}, true
	}
	return versionParams{}, false
}

// packetKind maps the long-header type bits of a version to a kind.
func (p versionParams) packetKind(typeBits byte) kind {
	if p.v2 {
		// v2: Retry 00, Initial 01, 0-RTT 10, Handshake 11.
		return [4]kind{kindRetry, kindInitial, kind0RTT, kindHandshake}[typeBits&3]
	}
	return kind(typeBits & 3)
}

// Keys are the client Initial keys of one (version, DCID). Secret, Key, IV
// and HP are exported for inspection; the cipher states are built once.
type Keys struct {
	Version uint32
	Secret  [32]byte // client_initial_secret
	Key     [16]byte // AEAD_AES_128_GCM key
	IV      [12]byte
	HP      [16]byte // header-protection key (AES-128)
	aead    cipher.AEAD
	hp      cipher.Block
}

// InitialKeys derives the client Initial keys for a version from the
// Destination Connection ID of the client's first Initial (RFC 9001 §5.2,
// RFC 9369 §3.3.1).
func InitialKeys(version uint32, dcid []byte) (Keys, error) {
	p, ok := params(version)
	if !ok {
		return Keys{}, fmt.Errorf("quic: initial keys for version %#08x: %w", version, ErrUnknownVersion)
	}
	if len(dcid) > 20 {
		return Keys{}, fmt.Errorf("quic: initial keys: dcid of %d bytes, max 20", len(dcid))
	}
	k := Keys{Version: version}
	// HKDF-SHA256 by hand: Extract is HMAC(salt, dcid), and each
	// Expand-Label output is at most 32 bytes, so a single HMAC block
	// T(1) = HMAC(secret, info || 0x01). Same result as crypto/hkdf (the
	// RFC vectors in the tests check it) at a fraction of the allocations.
	var initial [32]byte
	mac := hmac.New(sha256.New, p.salt)
	mac.Write(dcid)
	mac.Sum(initial[:0])
	mac = hmac.New(sha256.New, initial[:])
	expandLabel(mac, k.Secret[:], "client in")
	mac = hmac.New(sha256.New, k.Secret[:])
	expandLabel(mac, k.Key[:], p.prefix+"key")
	expandLabel(mac, k.IV[:], p.prefix+"iv")
	expandLabel(mac, k.HP[:], p.prefix+"hp")
	block, err := aes.NewCipher(k.Key[:])
	if err != nil {
		return Keys{}, fmt.Errorf("quic: initial aead: %w", err)
	}
	if k.aead, err = cipher.NewGCM(block); err != nil {
		return Keys{}, fmt.Errorf("quic: initial aead: %w", err)
	}
	if k.hp, err = aes.NewCipher(k.HP[:]); err != nil {
		return Keys{}, fmt.Errorf("quic: header protection: %w", err)
	}
	return k, nil
}

// expandLabel is TLS 1.3's HKDF-Expand-Label with an empty context, for
// outputs of at most 32 bytes; mac is keyed with the secret.
func expandLabel(mac hash.Hash, dst []byte, label string) {
	var info [64]byte
	const prefix = "tls13 "
	b := append(info[:0], byte(len(dst)>>8), byte(len(dst)), byte(len(prefix)+len(label)))
	b = append(b, prefix...)
	b = append(b, label...)
	b = append(b, 0, 1) // empty context, then HKDF's counter byte
	mac.Reset()
	mac.Write(b)
	var out [32]byte
	copy(dst, mac.Sum(out[:0]))
}

// Seal protects an Initial packet in place of the caller's buffers: hdr is
// the header through a 1–4 byte packet number whose length is in hdr[0]&3
// (the Length field must already count the payload plus the 16-byte tag),
// payload the plaintext frames. It returns the protected packet. Tests and
// tools use it to build Initials; the sniffer only opens them.
func (k *Keys) Seal(hdr []byte, pn uint64, payload []byte) []byte {
	pnLen := int(hdr[0]&3) + 1
	pnOffset := len(hdr) - pnLen
	nonce := k.nonce(pn)
	out := append([]byte(nil), hdr...)
	out = k.aead.Seal(out, nonce[:], payload, hdr)
	var mask [16]byte
	k.hp.Encrypt(mask[:], out[pnOffset+4:pnOffset+20])
	out[0] ^= mask[0] & 0x0f
	for i := range pnLen {
		out[pnOffset+i] ^= mask[1+i]
	}
	return out
}

func (k *Keys) nonce(pn uint64) [12]byte {
	n := k.IV
	for i := range 8 {
		n[11-i] ^= byte(pn >> (8 * i))
	}
	return n
}

package challenge

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"net/netip"
	"time"
)

// Token formats. Every token is base64url (no padding) of a payload and its
// HMAC-SHA256; the payload starts with a version byte and the id of the key
// that signed it.
const (
	versionClearance = 1
	versionChallenge = 2
)

// Clearance layout (version 1).
const (
	clrVersion   = 0
	clrKey       = 1  // 4 bytes
	clrExpires   = 5  // 8 bytes, Unix seconds
	clrID        = 13 // 8 random bytes, names the clearance for revocation
	clrNetwork   = 21 // 9 bytes: family, then 3 (IPv4 /24) or 8 (IPv6 /64) bytes
	clrUA        = 30 // 8 bytes of SHA-256 of the User-Agent
	clrJA4       = 38 // 8 bytes of SHA-256 of the JA4, zero when none was joined
	clrOwner     = 46 // 4 bytes: addr32 of the address it was issued to
	clrPayload   = 50
	clearanceN   = clrPayload + sha256.Size
	clearanceB64 = (clearanceN*8 + 5) / 6
)

// network is a client's network as tokens bind it: a family byte and the
// /24 (IPv4) or /64 (IPv6), zero-padded.
type network [9]byte

func networkOf(ip netip.Addr) network {
	var n network
	ip = ip.Unmap()
	switch {
	case ip.Is4():
		b := ip.As4()
		n[0] = 4
		copy(n[1:], b[:3])
	case ip.Is6():
		b := ip.As16()
		n[0] = 6
		copy(n[1:], b[:8])
	}
	return n
}

// maxHashed bounds the bytes of a User-Agent (or JA4) that are hashed
// without allocating; longer values are hashed on their first maxHashed
// bytes and their length.
const maxHashed = 1024

// hash8 is the first 8 bytes of SHA-256(s) (of its first maxHashed bytes
// and its length when longer), computed without allocating.
func hash8(s string) [8]byte {
	var buf [maxHashed + 8]byte
	n := copy(buf[:maxHashed], s)
	if len(s) > maxHashed {
		binary.BigEndian.PutUint64(buf[n:], uint64(len(s)))
		n += 8
	}
	sum := sha256.Sum256(buf[:n])
	var h [8]byte
	copy(h[:], sum[:8])
	return h
}

// clearance is a decoded clearance.
type clearance struct {
	raw [clearanceN]byte
}

func (c *clearance) keyID() uint32    { return binary.BigEndian.Uint32(c.raw[clrKey:]) }
func (c *clearance) expires() int64   { return int64(binary.BigEndian.Uint64(c.raw[clrExpires:])) }
func (c *clearance) id() uint64       { return binary.BigEndian.Uint64(c.raw[clrID:]) }
func (c *clearance) network() network { return network(c.raw[clrNetwork : clrNetwork+9]) }
func (c *clearance) owner() uint32    { return binary.BigEndian.Uint32(c.raw[clrOwner:]) }

// Subject is what a token binds: the client's address (its network is
// bound), User-Agent and, when one was joined, JA4.
type Subject struct {
	IP        netip.Addr
	UserAgent string
	JA4       string
}

// appendClearance signs a clearance for sub until expires and appends its
// base64url form to dst.
func appendClearance(dst []byte, k *key, sub Subject, id uint64, expires time.Time) []byte {
	var c clearance
	c.raw[clrVersion] = versionClearance
	binary.BigEndian.PutUint32(c.raw[clrKey:], k.id)
	binary.BigEndian.PutUint64(c.raw[clrExpires:], uint64(expires.Unix()))
	binary.BigEndian.PutUint64(c.raw[clrID:], id)
	n := networkOf(sub.IP)
	copy(c.raw[clrNetwork:], n[:])
	ua := hash8(sub.UserAgent)
	copy(c.raw[clrUA:], ua[:])
	if sub.JA4 != "" {
		j := hash8(sub.JA4)
		copy(c.raw[clrJA4:], j[:])
	}
	binary.BigEndian.PutUint32(c.raw[clrOwner:], addr32(sub.IP))
	mac := k.mac(c.raw[:clrPayload])
	copy(c.raw[clrPayload:], mac[:])
	return appendBase64(dst, c.raw[:])
}

// verifyClearance decodes and checks the clearance in s for sub at now. It
// allocates nothing. The id, expiry and owner (addr32 of the address it
// was issued to) are set once the signature is good, even when a binding
// fails, so a shared clearance can be tracked.
func verifyClearance(kr *Keyring, s string, sub Subject, now time.Time) (id uint64, expires int64, owner uint32, r Reason) {
	var c clearance
	if len(s) != clearanceB64 || !decodeBase64(c.raw[:], s) || c.raw[clrVersion] != versionClearance {
		return 0, 0, 0, ReasonMalformed
	}
	k := kr.find(c.keyID())
	if k == nil {
		return 0, 0, 0, ReasonUnknownKey
	}
	mac := k.mac(c.raw[:clrPayload])
	if !hmac.Equal(mac[:], c.raw[clrPayload:]) {
		return 0, 0, 0, ReasonBadSignature
	}
	id, expires, owner = c.id(), c.expires(), c.owner()
	if now.Unix() >= expires {
		return id, expires, owner, ReasonExpired
	}
	if c.network() != networkOf(sub.IP) {
		return id, expires, owner, ReasonNetwork
	}
	if ua := hash8(sub.UserAgent); !hmac.Equal(ua[:], c.raw[clrUA:clrUA+8]) {
		return id, expires, owner, ReasonUserAgent
	}
	// A clearance bound to a JA4 is refused on a request whose JA4 is
	// known and differs; the join is best effort, so an unknown JA4 passes.
	var zero [8]byte
	if sub.JA4 != "" && [8]byte(c.raw[clrJA4:clrJA4+8]) != zero {
		if j := hash8(sub.JA4); !hmac.Equal(j[:], c.raw[clrJA4:clrJA4+8]) {
			return id, expires, owner, ReasonJA4
		}
	}
	return id, expires, owner, ReasonOK
}

// base64url without padding, encoded and decoded without allocating.
const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

var b64Rev = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i := 0; i < len(b64); i++ {
		t[b64[i]] = byte(i)
	}
	return t
}()

func appendBase64(dst, src []byte) []byte {
	var acc uint
	bits := 0
	for _, b := range src {
		acc = acc<<8 | uint(b)
		bits += 8
		for bits >= 6 {
			bits -= 6
			dst = append(dst, b64[(acc>>uint(bits))&0x3f])
		}
	}
	if bits > 0 {
		dst = append(dst, b64[(acc<<uint(6-bits))&0x3f])
	}
	return dst
}

// decodeBase64 decodes s into dst, which must be exactly its decoded
// length; it reports false on any other character, length or non-zero
// padding bits (so one token has one spelling).
func decodeBase64(dst []byte, s string) bool {
	if len(s) != (len(dst)*8+5)/6 {
		return false
	}
	var acc uint
	bits, j := 0, 0
	for i := 0; i < len(s); i++ {
		v := b64Rev[s[i]]
		if v == 0xff {
			return false
		}
		acc = acc<<6 | uint(v)
		bits += 6
		if bits >= 8 {
			bits -= 8
			dst[j] = byte(acc >> uint(bits))
			j++
		}
	}
	return acc&(1<<uint(bits)-1) == 0
}

package challenge

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/cespare/xxhash/v2"
)

// Token formats. Every token is base64url (no padding) of a payload and its
// HMAC-SHA256; the payload starts with a version byte and the id of the key
// that signed it.
const (
	versionChallenge = 2
	// versionClearance 3 binds the User-Agent and JA4 by bind8; version 1
	// (SHA-256) is no longer read: such a clearance is challenged again.
	versionClearance = 3
)

// Clearance layout (version 1).
const (
	clrVersion   = 0
	clrKey       = 1  // 4 bytes
	clrExpires   = 5  // 8 bytes, Unix seconds
	clrID        = 13 // 8 random bytes, names the clearance for revocation
	clrNetwork   = 21 // 9 bytes: family, then 3 (IPv4 /24) or 8 (IPv6 /64) bytes
	clrUA        = 30 // 8 bytes: bind8 of the User-Agent
	clrJA4       = 38 // 8 bytes: bind8 of the JA4, zero when none was joined
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

// bind8 is what a clearance keeps of a User-Agent or JA4: a 64-bit xxHash,
// checked on every request a challenge covers (about 20 ns for a browser's
// User-Agent, against 130 ns for SHA-256). It needs no resistance to
// collisions: it sits under the clearance's MAC, and whoever could choose a
// colliding User-Agent can as well send the one the clearance was issued to.
// A changed User-Agent is told with the probability 1 - 2⁻⁶⁴.
func bind8(s string) [8]byte {
	var h [8]byte
	binary.BigEndian.PutUint64(h[:], xxhash.Sum64String(s))
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
	ua := bind8(sub.UserAgent)
	copy(c.raw[clrUA:], ua[:])
	if sub.JA4 != "" {
		j := bind8(sub.JA4)
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
	if ua := bind8(sub.UserAgent); ua != [8]byte(c.raw[clrUA:clrUA+8]) {
		return id, expires, owner, ReasonUserAgent
	}
	// A clearance bound to a JA4 is refused on a request whose JA4 is
	// known and differs; the join is best effort, so an unknown JA4 passes.
	var zero [8]byte
	if sub.JA4 != "" && [8]byte(c.raw[clrJA4:clrJA4+8]) != zero {
		if j := bind8(sub.JA4); j != [8]byte(c.raw[clrJA4:clrJA4+8]) {
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
// padding bits (so one token has one spelling). Four characters are
// decoded at a time: a clearance is checked on every request a challenge
// covers.
func decodeBase64(dst []byte, s string) bool {
	if len(s) != (len(dst)*8+5)/6 {
		return false
	}
	i, j := 0, 0
	for ; i+4 <= len(s) && j+3 <= len(dst); i, j = i+4, j+3 {
		a, b, c, d := b64Rev[s[i]], b64Rev[s[i+1]], b64Rev[s[i+2]], b64Rev[s[i+3]]
		// Valid values are below 64; 0xff marks any other byte.
		if (a|b|c|d)&0xc0 != 0 {
			return false
		}
		v := uint(a)<<18 | uint(b)<<12 | uint(c)<<6 | uint(d)
		dst[j], dst[j+1], dst[j+2] = byte(v>>16), byte(v>>8), byte(v)
	}
	// The length check leaves 0, 2 or 3 characters: 1 or 2 bytes and 4 or
	// 2 padding bits that must be zero.
	switch len(s) - i {
	case 0:
		return true
	case 2:
		a, b := b64Rev[s[i]], b64Rev[s[i+1]]
		if (a|b)&0xc0 != 0 || b&0x0f != 0 {
			return false
		}
		dst[j] = a<<2 | b>>4
		return true
	case 3:
		a, b, c := b64Rev[s[i]], b64Rev[s[i+1]], b64Rev[s[i+2]]
		if (a|b|c)&0xc0 != 0 || c&0x03 != 0 {
			return false
		}
		v := uint(a)<<12 | uint(b)<<6 | uint(c)
		dst[j], dst[j+1] = byte(v>>10), byte(v>>2)
		return true
	}
	return false
}

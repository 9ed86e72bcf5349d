package engine

import (
	"encoding/binary"
	"net/netip"

	"github.com/guardd/guardd/counting"
)

// addrMemoSize is the number of entries of a Matches' address memo: a
// direct-mapped table of one cache line per entry (4 KB), small enough to
// come back into the cache quickly when a Matches is reused. On a replay
// of a million-line log of 8,000 addresses, it answers 70% of the lookups
// (a few heavy clients send most requests).
const addrMemoSize = 64

// addrText is one address or prefix as a key holds it, and the hash of
// its text and end (the key of a rule keyed on it alone): 64 bytes.
type addrText struct {
	addr  [16]byte // As16
	khash uint64
	n     uint8 // len(text) | is4<<6 (an IPv4 address or prefix); 0: empty
	bits  uint8 // the prefix's length + 1; 0: an address
	text  [38]byte
}

// addrMemo remembers the text and key hash of the addresses and prefixes
// (ip.src, ip.src.prefix) of the latest events: formatting an address,
// IPv6 above all, and hashing it cost more than a lookup. They are a
// function of the address alone, the same for every engine and rule set,
// so an entry is never stale; a new address replaces the entry it maps
// to. Addresses with a zone, and texts longer than an entry holds, are
// formatted every time.
type addrMemo [addrMemoSize]addrText

// addrValue sets v, the value of ip.src (bits -1) or of ip.src.prefix
// (bits its length) in the event being prepared: the text, ended, is
// appended to m.Keys and v.khash is set.
func (m *Matches) addrValue(v *keyed, a netip.Addr, bits int) {
	if m.addrs == nil {
		m.addrs = new(addrMemo)
	}
	b := a.As16()
	var t *addrText
	tag := uint8(0)
	if a.Is4() {
		tag = 1 << 6
	}
	if a.Zone() == "" {
		t = &m.addrs[addrSlot(b, bits)]
		if t.n&^(1<<6) != 0 && t.n&(1<<6) == tag && t.addr == b && int(t.bits) == bits+1 {
			off := len(m.Keys)
			n := int(t.n &^ (1 << 6))
			m.Keys = append(append(m.Keys, t.text[:n]...), keyEnd)
			*v = keyed{stamp: m.stamp, off: uint32(off), len: uint32(n + 1), ok: true, khash: t.khash, khashed: true}
			return
		}
	}
	off := len(m.Keys)
	if bits < 0 {
		m.Keys = a.AppendTo(m.Keys)
	} else {
		m.Keys = netip.PrefixFrom(a, bits).AppendTo(m.Keys)
	}
	m.Keys = append(m.Keys, keyEnd)
	text := m.Keys[off:]
	*v = keyed{stamp: m.stamp, off: uint32(off), len: uint32(len(text)), ok: true, khash: counting.Hash(text), khashed: true}
	if t == nil {
		return
	}
	if n := len(text) - 1; n <= len(t.text) { // else the entry keeps the address it has
		t.addr, t.khash, t.n, t.bits = b, v.khash, uint8(n)|tag, uint8(bits+1)
		copy(t.text[:], text[:n])
	}
}

// addrSlot is the entry of the memo an address or prefix maps to.
func addrSlot(b [16]byte, bits int) int {
	h := binary.LittleEndian.Uint64(b[:8])*0x9e3779b97f4a7c15 ^ binary.LittleEndian.Uint64(b[8:]) ^ uint64(bits+1)
	h = (h ^ h>>33) * 0xff51afd7ed558ccd // murmur3's finaliser: every bit reaches the top ones
	h = (h ^ h>>33) * 0xc4ceb9fe1a85ec53
	return int(h >> (64 - 6)) // addrMemoSize entries
}

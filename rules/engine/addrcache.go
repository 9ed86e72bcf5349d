package engine

import (
	"encoding/binary"
	"net/netip"

	"github.com/guardd/guardd/counting"
)

// addrCacheBits sizes an addrCache: 1,024 addresses, 72 KiB.
const addrCacheBits = 10

// addrCache is a direct-mapped table of formatted client addresses: the
// text AppendTo makes, the hash of the text (a distinct value's) and of the
// text with its end (a key of ip.src alone). It holds no address with a
// zone: the caller formats those itself.
type addrCache [1 << addrCacheBits]addrText

type addrText struct {
	addr        netip.Addr // the zero Addr (never looked up): an empty entry
	hash, ended uint64
	n           uint8
	text        [39]byte // the longest text of an address without zone
}

// addr returns the entry of a, a valid address without zone, formatting
// it on a miss.
func (m *Matches) addr(a netip.Addr) *addrText {
	if m.addrs == nil {
		m.addrs = new(addrCache)
	}
	b := a.As16()
	h := (binary.LittleEndian.Uint64(b[:8])*0x9e3779b97f4a7c15 ^ binary.LittleEndian.Uint64(b[8:])) * 0xbf58476d1ce4e5b9
	e := &m.addrs[h>>(64-addrCacheBits)]
	if e.addr == a {
		return e
	}
	var buf [64]byte
	t := append(a.AppendTo(buf[:0]), keyEnd)
	e.ended = counting.Hash(t)
	t = t[:len(t)-1]
	e.hash = counting.Hash(t)
	e.n = uint8(copy(e.text[:], t))
	e.addr = a
	return e
}

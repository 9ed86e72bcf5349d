package engine

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"net/netip"
	"strconv"

	"github.com/guardd/guardd/characteristics"
)

// keyEnd ends each characteristic value in a rule's key bytes: the values of
// the rule's characteristics in order, each followed by keyEnd. It never
// occurs in UTF-8, so a value cannot hide a boundary.
const keyEnd = 0xff

// AppendKey appends c's value in ev, ended, to a rule's key bytes.
func AppendKey(key []byte, c characteristics.Characteristic, ev *characteristics.Event) []byte {
	return append(c.AppendValue(key, ev), keyEnd)
}

// appendKey is AppendKey for a value ev may lack: ok is false, and key
// unchanged, when c is absent from ev. It reads each value once where
// Present and AppendKey would read it twice, and formats it as
// Characteristic.AppendValue does (TestAppendKeyAsAppendValue).
// With addrs, the text of addresses and networks is remembered there.
func appendKey(key []byte, c characteristics.Characteristic, ev *characteristics.Event, addrs *addrCache) (_ []byte, ok bool) {
	switch c.Kind() {
	case characteristics.KindAddr: // ip.src: AppendValue formats ev.IP
		if !ev.IP.IsValid() {
			return key, false
		}
		if addrs != nil {
			return append(addrs.appendAddr(key, ev.IP, -1), keyEnd), true
		}
		return append(ev.IP.AppendTo(key), keyEnd), true
	case characteristics.KindPrefix: // ip.src.prefix: ev.Prefix
		if !ev.Prefix.IsValid() {
			return key, false
		}
		if addrs != nil {
			return append(addrs.appendAddr(key, ev.Prefix.Addr(), ev.Prefix.Bits()), keyEnd), true
		}
		return append(ev.Prefix.AppendTo(key), keyEnd), true
	case characteristics.KindNumber: // no number is read as text
		f, ok := c.Num(ev)
		if !ok {
			return key, false
		}
		return append(strconv.AppendFloat(key, f, 'f', -1, 64), keyEnd), true
	}
	s, ok := c.Str(ev)
	if !ok {
		return key, false
	}
	return append(append(key, s...), keyEnd), true
}

// addrCache remembers the text of the addresses and networks a Matches
// formatted, by value: nearly every rule's key starts with the client's
// address or network, and netip formats them digit by digit (IPv6 with its
// longest run of zeros found first), which made formatting them the largest
// single cost of Prepare on a replayed log. A client's requests come in
// bursts, so most events find their address here (about nine in ten of the
// benchmark log's, with a table per batch). It is direct-mapped: another
// value in the same entry only evicts it, since a hit compares the whole
// value. 80 KiB, made on the first address a Matches formats.
type addrCache [addrCacheSize]addrText

const addrCacheSize = 1024 // a power of two

// addrText is one remembered address (bits < 0) or network, and its text.
// An entry whose n is 0 is empty.
type addrText struct {
	addr netip.Addr
	bits int16
	n    uint8
	text [maxAddrText]byte
}

// maxAddrText is the longest text remembered: an IPv4-mapped IPv6 network
// ("::ffff:255.255.255.255/128") and any IPv6 one without a zone fit.
const maxAddrText = 50

// addrSeed keys the entry of a value, so that no one can aim addresses at
// one entry (a collision there only evicts).
var addrSeed = [2]uint64{rand.Uint64() | 1, rand.Uint64() | 1}

// appendAddr appends a's text, or that of the network a/n when n >= 0, as netip.Addr.AppendTo and netip.Prefix.AppendTo write them.
func (c *addrCache) appendAddr(dst []byte, a netip.Addr, n int) []byte {
	b16 := a.As16()
	lo, hi := binary.LittleEndian.Uint64(b16[:8]), binary.LittleEndian.Uint64(b16[8:])
	// The high half of a product depends on every bit of both factors.
	h, _ := bits.Mul64(lo^addrSeed[0], hi^addrSeed[1]^uint64(n))
	e := &c[h&(addrCacheSize-1)]
	if e.n != 0 && e.addr == a && int(e.bits) == n {
		return append(dst, e.text[:e.n]...)
	}
	off := len(dst)
	if n < 0 {
		dst = a.AppendTo(dst)
	} else {
		dst = netip.PrefixFrom(a, n).AppendTo(dst)
	}
	if t := dst[off:]; len(t) <= maxAddrText {
		e.addr, e.bits, e.n = a, int16(n), uint8(len(t))
		copy(e.text[:], t)
	}
	return dst
}

// AppendKeyValue appends the value v, ended, to a rule's key bytes: the
// bytes AppendKey makes from an event whose characteristic has value v.
func AppendKeyValue(key []byte, v string) []byte {
	return append(append(key, v...), keyEnd)
}

// NextKeyValue splits a rule's key bytes into the first value and the rest,
// the inverse of AppendKey; a last value without its end is taken whole.
func NextKeyValue(key []byte) (value, rest []byte) {
	i := 0
	for i < len(key) && key[i] != keyEnd {
		i++
	}
	value = key[:i]
	if i < len(key) {
		i++
	}
	return value, key[i:]
}

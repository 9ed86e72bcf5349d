package quic

import (
	"bytes"
	"encoding/binary"
	"slices"
)

// Limits of one flow.
const (
	// MaxCrypto caps the CRYPTO stream kept per flow (and so the hello).
	MaxCrypto = 64 << 10
	// maxInitials is how many client Initials that opened are read before
	// giving up on a hello.
	maxInitials = 10
	// maxAttempts bounds the Initial-looking packets tried (opened or not),
	// which bounds the AEAD and key-derivation work one flow can cause.
	maxAttempts = 32
	// maxRanges bounds the CRYPTO fragments tracked.
	maxRanges = 256
)

// longHeader is what the sniffer reads of a long-header packet.
type longHeader struct {
	version  uint32
	params   versionParams
	kind     kind
	dcid     []byte
	pnOffset int // offset of the protected packet number
	end      int // offset just past the packet (pnOffset + Length)
}

// parseLong reads the long header at the start of b. ok is false for a short
// header, Version Negotiation, an unknown version, a Retry (which has no
// Length) or inconsistent lengths: in each case the rest of the datagram
// cannot be walked. The 0x40 fixed bit is not required (RFC 9287).
func parseLong(b []byte) (h longHeader, ok bool) {
	if len(b) < 7 || b[0]&0x80 == 0 {
		return h, false
	}
	h.version = binary.BigEndian.Uint32(b[1:5])
	var known bool
	if h.params, known = params(h.version); !known {
		return h, false
	}
	h.kind = h.params.packetKind(b[0] >> 4)
	if h.kind == kindRetry {
		return h, false
	}
	pos := 5
	dl := int(b[pos])
	pos++
	if dl > 20 || pos+dl >= len(b) {
		return h, false
	}
	h.dcid = b[pos : pos+dl]
	pos += dl
	sl := int(b[pos])
	pos++
	if sl > 20 || pos+sl > len(b) {
		return h, false
	}
	pos += sl
	if h.kind == kindInitial {
		tl, n := varint(b[pos:])
		if n == 0 || tl > uint64(len(b)) {
			return h, false
		}
		pos += n + int(tl)
		if pos > len(b) {
			return h, false
		}
	}
	length, n := varint(b[pos:])
	if n == 0 || length > uint64(len(b)) {
		return h, false
	}
	pos += n
	h.pnOffset = pos
	h.end = pos + int(length)
	if h.end > len(b) {
		return h, false
	}
	return h, true
}

// varint reads a QUIC variable-length integer; n is 0 when b is too short.
func varint(b []byte) (v uint64, n int) {
	if len(b) == 0 {
		return 0, 0
	}
	n = 1 << (b[0] >> 6)
	if len(b) < n {
		return 0, 0
	}
	v = uint64(b[0] & 0x3f)
	for _, c := range b[1:n] {
		v = v<<8 | uint64(c)
	}
	return v, n
}

// LooksLikeInitial is a cheap check that a datagram starts with a long-header
// Initial packet of a known version with consistent lengths and room for
// header-protection sampling. It does no cryptography.
func LooksLikeInitial(datagram []byte) bool {
	h, ok := parseLong(datagram)
	return ok && h.kind == kindInitial && h.pnOffset+4+16 <= h.end
}

type span struct{ start, end int }

// Flow reassembles the ClientHello of one client UDP flow (5-tuple) from its
// Initial packets. The zero Flow is ready. Handle gets every UDP payload the
// client sent, in capture order.
//
// Keys come from the original DCID (the DCID of the first client Initial that
// opens); when a later Initial does not open under them, the packet's own
// DCID is tried and kept if it works (the client's Initials after a Retry).
// CRYPTO frames may arrive in any order, scattered over packets and
// datagrams, overlapping (the first copy of a byte wins). A change of version
// before the hello is complete starts over.
type Flow struct {
	keys, alt  Keys
	haveKeys   bool
	haveAlt    bool
	odcid      [20]byte
	odcidLen   int
	altDCID    [20]byte
	altLen     int
	version    uint32
	largestPN  int64
	havePN     bool
	crypto     []byte
	ranges     []span
	initials   int
	attempts   int
	pkt        []byte   // scratch copy of the packet being opened
	mask       [16]byte // header-protection mask (a field: no escape per call)
	nonceBuf   [12]byte
	done       bool
	helloBytes int
}

// Reset readies f for a new flow, keeping its buffers.
func (f *Flow) Reset() {
	crypto, ranges, pkt := f.crypto[:0], f.ranges[:0], f.pkt[:0]
	*f = Flow{crypto: crypto, ranges: ranges, pkt: pkt}
}

// Done reports that the flow yielded its hello or was given up: the caller
// can stop handing it datagrams.
func (f *Flow) Done() bool { return f.done }

// Handle reads one datagram the client sent. It returns the complete
// ClientHello handshake message (type 0x01, 3-byte length, body) the first
// time it is complete, and never again. The slice stays valid until Reset.
// Datagrams that hold no client Initial (server packets, short headers,
// noise, Initials that do not open) are ignored. The datagram is not
// modified.
func (f *Flow) Handle(datagram []byte) (hello []byte, ok bool) {
	b := datagram
	for len(b) > 0 && !f.done {
		h, ok := parseLong(b)
		if !ok {
			return nil, false // short header, VN, Retry, padding or garbage
		}
		pkt := b[:h.end]
		b = b[h.end:]
		if h.kind != kindInitial {
			continue // 0-RTT or Handshake coalesced after the Initial
		}
		if hello, ok := f.initial(pkt, &h); ok {
			return hello, true
		}
	}
	return nil, false
}

func (f *Flow) initial(pkt []byte, h *longHeader) ([]byte, bool) {
	f.attempts++
	if f.attempts > maxAttempts {
		f.done = true
		return nil, false
	}
	if h.pnOffset+4+16 > h.end {
		return nil, false // too short to sample: not a valid Initial
	}
	var payload []byte
	switch {
	case !f.haveKeys || h.version != f.version:
		// The flow's first client Initial, or a new version before the
		// hello completed (after Version Negotiation, say), which starts
		// over once it opens.
		k, err := InitialKeys(h.version, h.dcid)
		if err != nil {
			return nil, false
		}
		p, ok := f.open(&k, pkt, h.pnOffset)
		if !ok {
			return nil, false // not a client Initial
		}
		if f.haveKeys {
			attempts, scratch := f.attempts, f.pkt
			f.Reset()
			f.attempts, f.pkt = attempts, scratch
			p, _ = f.open(&k, pkt, h.pnOffset)
		}
		f.keys, f.haveKeys, f.version = k, true, h.version
		f.odcidLen = copy(f.odcid[:], h.dcid)
		payload = p
	default:
		p, ok := f.open(&f.keys, pkt, h.pnOffset)
		if !ok {
			p, ok = f.openAlt(pkt, h)
			if !ok {
				return nil, false
			}
		}
		payload = p
	}
	f.initials++
	hello, ok := f.frames(payload)
	if !ok && !f.done && f.initials >= maxInitials {
		f.done = true
	}
	return hello, ok
}

// openAlt tries keys from the packet's own DCID (a Retry changed them) and
// adopts them when they work.
func (f *Flow) openAlt(pkt []byte, h *longHeader) ([]byte, bool) {
	if bytes.Equal(h.dcid, f.odcid[:f.odcidLen]) {
		return nil, false
	}
	if !f.haveAlt || !bytes.Equal(h.dcid, f.altDCID[:f.altLen]) {
		k, err := InitialKeys(h.version, h.dcid)
		if err != nil {
			return nil, false
		}
		f.alt, f.haveAlt = k, true
		f.altLen = copy(f.altDCID[:], h.dcid)
	}
	p, ok := f.open(&f.alt, pkt, h.pnOffset)
	if !ok {
		return nil, false
	}
	f.keys = f.alt
	f.odcid, f.odcidLen = f.altDCID, f.altLen
	f.haveAlt = false
	return p, true
}

// open removes header protection and the AEAD from a copy of pkt. It returns
// the plaintext frames.
func (f *Flow) open(k *Keys, pkt []byte, pnOffset int) ([]byte, bool) {
	s := append(f.pkt[:0], pkt...)
	f.pkt = s
	mask := f.mask[:]
	k.hp.Encrypt(mask, s[pnOffset+4:pnOffset+20])
	s[0] ^= mask[0] & 0x0f
	pnLen := int(s[0]&3) + 1
	var truncated uint64
	for i := range pnLen {
		s[pnOffset+i] ^= mask[1+i]
		truncated = truncated<<8 | uint64(s[pnOffset+i])
	}
	ct := s[pnOffset+pnLen:]
	if len(ct) < 16 {
		return nil, false
	}
	pn := f.decodePN(truncated, pnLen)
	f.nonceBuf = k.nonce(pn)
	p, err := k.aead.Open(ct[:0], f.nonceBuf[:], ct, s[:pnOffset+pnLen])
	if err != nil {
		return nil, false
	}
	if !f.havePN || int64(pn) > f.largestPN {
		f.largestPN, f.havePN = int64(pn), true
	}
	return p, true
}

// decodePN expands a truncated packet number against the largest seen
// (RFC 9000 Appendix A.3).
func (f *Flow) decodePN(truncated uint64, pnLen int) uint64 {
	expected := uint64(0)
	if f.havePN {
		expected = uint64(f.largestPN) + 1
	}
	win := uint64(1) << (8 * pnLen)
	hwin := win / 2
	candidate := expected&^(win-1) | truncated
	switch {
	case candidate+hwin <= expected && candidate < (1<<62)-win:
		return candidate + win
	case candidate > expected+hwin && candidate >= win:
		return candidate - win
	}
	return candidate
}

// frames walks an Initial's frames, collecting CRYPTO data. It returns the
// hello once the CRYPTO stream holds it.
func (f *Flow) frames(p []byte) ([]byte, bool) {
	for len(p) > 0 {
		switch t := p[0]; t {
		case 0x00: // PADDING
			i := 1
			for i < len(p) && p[i] == 0 {
				i++
			}
			p = p[i:]
		case 0x01: // PING
			p = p[1:]
		case 0x02, 0x03: // ACK, ACK_ECN
			p = p[1:]
			var count uint64
			fields := 4
			for i := range fields {
				v, n := varint(p)
				if n == 0 {
					return nil, false
				}
				if i == 2 {
					count = v
				}
				p = p[n:]
			}
			extra := 2 * count
			if t == 0x03 {
				extra += 3
			}
			for ; extra > 0; extra-- {
				_, n := varint(p)
				if n == 0 {
					return nil, false
				}
				p = p[n:]
			}
		case 0x06: // CRYPTO
			off, n := varint(p[1:])
			if n == 0 {
				return nil, false
			}
			p = p[1+n:]
			l, n := varint(p)
			if n == 0 || l > uint64(len(p)-n) {
				return nil, false
			}
			data := p[n : n+int(l)]
			p = p[n+int(l):]
			if off > MaxCrypto || off+l > MaxCrypto {
				f.done = true
				return nil, false
			}
			if f.addCrypto(int(off), data) {
				if hello, ok := f.hello(); ok || f.done {
					return hello, ok
				}
			}
		case 0x1c, 0x1d: // CONNECTION_CLOSE: the client gave up
			f.done = true
			return nil, false
		default:
			return nil, false // not allowed in an Initial: stop reading it
		}
	}
	return nil, false
}

// addCrypto stores data at off, keeping bytes already held (first copy
// wins). It reports whether anything new was stored.
func (f *Flow) addCrypto(off int, data []byte) bool {
	if len(data) == 0 {
		return false
	}
	end := off + len(data)
	if end > len(f.crypto) {
		f.crypto = slices.Grow(f.crypto, end-len(f.crypto))[:end]
	}
	pos, added := off, false
	for _, r := range f.ranges {
		if r.end <= pos {
			continue
		}
		if r.start >= end {
			break
		}
		if r.start > pos {
			copy(f.crypto[pos:r.start], data[pos-off:])
			added = true
		}
		pos = max(pos, r.end)
		if pos >= end {
			break
		}
	}
	if pos < end {
		copy(f.crypto[pos:end], data[pos-off:])
		added = true
	}
	if !added {
		return false
	}
	// Insert [off, end) and merge overlapping or touching spans.
	i, _ := slices.BinarySearchFunc(f.ranges, off, func(r span, t int) int { return r.start - t })
	f.ranges = slices.Insert(f.ranges, i, span{off, end})
	out := f.ranges[:1]
	for _, r := range f.ranges[1:] {
		last := &out[len(out)-1]
		if r.start <= last.end {
			last.end = max(last.end, r.end)
		} else {
			out = append(out, r)
		}
	}
	f.ranges = out
	if len(f.ranges) > maxRanges {
		f.done = true
	}
	return true
}

// hello returns the ClientHello once the contiguous prefix holds it.
func (f *Flow) hello() ([]byte, bool) {
	if len(f.ranges) == 0 || f.ranges[0].start != 0 {
		return nil, false
	}
	have := f.ranges[0].end
	if have < 4 {
		return nil, false
	}
	if f.crypto[0] != 0x01 {
		f.done = true // the stream does not start with a ClientHello
		return nil, false
	}
	n := 4 + (int(f.crypto[1])<<16 | int(f.crypto[2])<<8 | int(f.crypto[3]))
	if n > MaxCrypto {
		f.done = true
		return nil, false
	}
	if have < n {
		return nil, false
	}
	f.done = true
	return f.crypto[:n:n], true
}

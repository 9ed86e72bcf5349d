package tlsfp

// TLS record layer.
const (
	recordHeaderLen  = 5
	maxRecordLen     = 16384 + 2048 // 18432: TLSCiphertext limit of RFC 5246
	recChangeCipher  = 20
	recAlert         = 21
	recHandshake     = 22
	recApplication   = 23
	maxHellosPerFlow = 4
	maxStreamBytes   = 64 << 10
)

// LooksLikeClientHelloRecord reports whether b starts with a TLS record that
// opens a ClientHello: type 0x16, version 0x0300–0x0304, length at most 18432
// and handshake type 0x01. It reads only the first 6 bytes.
func LooksLikeClientHelloRecord(b []byte) bool {
	if len(b) < 6 || b[0] != recHandshake || b[1] != 3 || b[2] > 4 {
		return false
	}
	n := int(b[3])<<8 | int(b[4])
	return n > 0 && n <= maxRecordLen && b[5] == 0x01
}

// Scanner follows one client-to-server TLS byte stream from where TLS starts
// and emits every complete ClientHello handshake message in it.
//
// Type-22 record payloads are appended to a handshake buffer, so a hello may
// span records and a record may hold several messages; type-20 records
// (ChangeCipherSpec, which precedes the hello after a HelloRetryRequest) are
// skipped. The scanner stops at an alert or application-data record, an
// unknown record type or oversized record, the first handshake message that
// is not a ClientHello (ClientKeyExchange, or an encrypted Finished), a hello
// that does not parse, after 4 hellos, or after 64 KiB. The record version is
// not checked.
//
// If the stream starts with an SSLv2-compatible CLIENT-HELLO, that record is
// emitted whole (its first byte has the top bit set; see ParseHello) and the
// scanner stops.
//
// The zero Scanner is ready. Its buffers are reused after Reset, so a
// Scanner kept per flow or pooled scans without allocating.
type Scanner struct {
	hdr     [recordHeaderLen]byte
	hdrN    int    // bytes of hdr filled
	recType byte   // type of the record being read
	recLeft int    // payload bytes of that record still to come
	hs      []byte // handshake buffer: unconsumed type-22 payload
	total   int    // stream bytes consumed
	hellos  int
	started bool
	sslv2   int // != 0: reading an SSLv2 record of this total length (-1: not known yet)
	done    bool
	ch      ClientHello // validates each hello before it is emitted
}

// Reset readies s for a new stream, keeping its buffers.
func (s *Scanner) Reset() {
	hs, ch := s.hs[:0], s.ch
	*s = Scanner{hs: hs, ch: ch}
}

// Done reports that the scanner has stopped: the caller can stop feeding it.
func (s *Scanner) Done() bool { return s.done }

// Hellos is the number of hellos emitted so far.
func (s *Scanner) Hellos() int { return s.hellos }

// Parsed is the last emitted hello, already parsed. It is valid during the
// emit call (and until the next Feed or Reset), so callers need not parse the
// bytes again.
func (s *Scanner) Parsed() *ClientHello { return &s.ch }

// Feed consumes the next contiguous, in-order bytes of the stream. emit gets
// each complete, valid ClientHello handshake message (or SSLv2 record); the
// slice is valid only during the call.
func (s *Scanner) Feed(p []byte, emit func(hello []byte)) {
	for len(p) > 0 && !s.done {
		if s.total >= maxStreamBytes {
			s.done = true
			return
		}
		if !s.started && s.hdrN == 0 && p[0]&0x80 != 0 && s.sslv2 == 0 {
			s.startSSLv2(p)
		}
		if s.sslv2 != 0 {
			p = s.feedSSLv2(p, emit)
			continue
		}
		if s.recLeft == 0 {
			// Reading a record header.
			n := copy(s.hdr[s.hdrN:], p)
			s.hdrN += n
			s.total += n
			p = p[n:]
			if s.hdrN < recordHeaderLen {
				return
			}
			s.hdrN = 0
			s.started = true
			s.recType = s.hdr[0]
			s.recLeft = int(s.hdr[3])<<8 | int(s.hdr[4])
			switch {
			case s.recLeft > maxRecordLen,
				s.recType != recHandshake && s.recType != recChangeCipher:
				s.done = true // alert, application data, or not TLS
				return
			}
			continue
		}
		n := min(s.recLeft, len(p))
		chunk := p[:n]
		p = p[n:]
		s.recLeft -= n
		s.total += n
		if s.recType == recHandshake {
			s.hs = append(s.hs, chunk...)
			s.drain(emit)
		}
	}
}

// drain emits the complete messages at the front of the handshake buffer.
func (s *Scanner) drain(emit func([]byte)) {
	off := 0
	for !s.done && len(s.hs)-off >= 4 {
		m := s.hs[off:]
		if m[0] != 0x01 {
			s.done = true // first message that is not a ClientHello
			break
		}
		n := 4 + (int(m[1])<<16 | int(m[2])<<8 | int(m[3]))
		if n > MaxHelloLen {
			s.done = true
			break
		}
		if len(m) < n {
			break
		}
		if ParseClientHello(m[:n], &s.ch) != nil {
			s.done = true
			break
		}
		s.hellos++
		emit(m[:n])
		off += n
		if s.hellos >= maxHellosPerFlow {
			s.done = true
		}
	}
	if off > 0 {
		s.hs = s.hs[:copy(s.hs, s.hs[off:])]
	}
}

func (s *Scanner) startSSLv2(p []byte) {
	s.started = true
	s.sslv2 = -1 // length not known until two bytes are in
	s.hs = s.hs[:0]
}

// feedSSLv2 buffers one SSLv2 record and emits it if it parses.
func (s *Scanner) feedSSLv2(p []byte, emit func([]byte)) []byte {
	if s.sslv2 < 0 {
		n := min(2-len(s.hs), len(p))
		s.hs = append(s.hs, p[:n]...)
		s.total += n
		p = p[n:]
		if len(s.hs) < 2 {
			return p
		}
		s.sslv2 = 2 + (int(s.hs[0]&0x7f)<<8 | int(s.hs[1]))
	}
	n := min(s.sslv2-len(s.hs), len(p))
	s.hs = append(s.hs, p[:n]...)
	s.total += n
	if len(s.hs) == s.sslv2 {
		if ParseSSLv2Hello(s.hs, &s.ch) == nil {
			s.hellos++
			emit(s.hs)
		}
		s.done = true
	}
	return p[n:]
}

// helloScanWindow bounds FindHello's search.
const helloScanWindow = 16 << 10

// FindHello scans the first 16 KiB of b for a TLS record that begins a
// complete, valid ClientHello (the fallback for STARTTLS and unknown
// preambles) and returns its offset, or -1.
func FindHello(b []byte) int {
	var s Scanner
	end := min(len(b), helloScanWindow)
	for i := 0; i+6 <= end; i++ {
		if b[i] != recHandshake || !LooksLikeClientHelloRecord(b[i:]) {
			continue
		}
		s.Reset()
		found := false
		s.started = true // a record, never an SSLv2 start
		s.Feed(b[i:], func([]byte) { found = true; s.done = true })
		if found {
			return i
		}
	}
	return -1
}

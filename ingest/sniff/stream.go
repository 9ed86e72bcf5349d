package sniff

import (
	"bytes"

	"github.com/guardd/guardd/characteristics/ja4h"
	"github.com/guardd/guardd/characteristics/tlsfp"
)

// States of a stream.
const (
	stClassify uint8 = iota // looking at the first bytes to learn what they are
	stTLS                   // TLS records: hellos go to the Scanner
	stHTTP                  // HTTP/1.x requests
	stDone                  // nothing more to read
)

// stream reads the in-order bytes of one direction of a TCP connection. Its
// content decides what it is, never its port: a TLS record, an SSLv2 hello, an
// HTTP/1.x request (a CONNECT hands what follows back to classification), a
// SOCKS4/4a or SOCKS5 request (likewise), or else a ClientHello found by
// scanning the first scanWindow bytes (STARTTLS).
type stream struct {
	state  uint8
	pre    []byte // bytes not yet classified
	tls    *tlsfp.Scanner
	http   *ja4h.Parser
	hellos int // hellos emitted so far, for hello_index
}

// feed consumes in-order bytes of side's stream.
func (s *Sniffer) feed(f *flow, side int, st *stream, b []byte) {
	for len(b) > 0 && st.state != stDone {
		switch st.state {
		case stClassify:
			if len(st.pre) > 0 {
				st.pre = append(st.pre, b...)
				b = s.classify(f, side, st)
				break
			}
			// Most streams are recognised from their first segment:
			// classify it in place, and copy it only to keep it.
			st.pre = b
			b = s.classify(f, side, st)
			if st.state == stClassify && st.pre != nil {
				st.pre = bytes.Clone(st.pre)
			}
		case stTLS:
			s.feedTLS(f, side, st, b)
			b = nil
		case stHTTP:
			b = s.feedHTTP(f, side, st, b)
		}
	}
}

func (s *Sniffer) feedTLS(f *flow, side int, st *stream, b []byte) {
	src, sport, dst, dport := f.key.endpoints(side)
	st.tls.Feed(b, func(h []byte) {
		st.hellos++
		s.hello(src, sport, dst, dport, h, st.tls.Parsed(), 't', ProtoTLS, st.hellos)
	})
	if st.tls.Done() {
		s.streamDone(f, side, st)
	}
}

// feedHTTP returns the bytes after a CONNECT request, which go back to
// classification.
func (s *Sniffer) feedHTTP(f *flow, side int, st *stream, b []byte) []byte {
	src, sport, dst, dport := f.key.endpoints(side)
	rest, done := st.http.Feed(b, func(r *ja4h.Request) {
		s.request(src, sport, dst, dport, r)
	})
	if len(rest) > 0 || (done && rest != nil) {
		rest = bytes.Clone(rest) // it may alias the Parser's buffer
		s.pool.putStream(st)
		st.state = stClassify
		return rest
	}
	if done {
		s.streamDone(f, side, st)
	}
	return nil
}

// streamDone ends side's stream; the flow is done once its client's is.
func (s *Sniffer) streamDone(f *flow, side int, st *stream) {
	st.state = stDone
	s.pool.putStream(st)
	if int(f.client) == side {
		f.done = true
		return
	}
	if o := f.dir[1-side]; o != nil && o.st.state == stDone {
		f.done = true
	}
}

// setClient records side as the client and drops the other direction.
func (s *Sniffer) setClient(f *flow, side int) {
	f.client = int8(side)
	s.pool.putDir(f.dir[1-side])
	f.dir[1-side] = nil
}

// classify looks at st.pre. When it recognises the content it switches state
// and returns the bytes the new state must consume; otherwise it returns nil
// and keeps the bytes for the next segment, up to scanWindow.
func (s *Sniffer) classify(f *flow, side int, st *stream) []byte {
	p := st.pre
	switch {
	case p[0] == 0x16:
		if tlsfp.LooksLikeClientHelloRecord(p) {
			return s.startTLS(f, side, st, p)
		}
	case p[0]&0x80 != 0:
		if tlsfp.LooksLikeSSLv2Hello(p) { // the Scanner reads it whole
			return s.startTLS(f, side, st, p)
		}
	case p[0] == 0x04 || p[0] == 0x05:
		if n, _ := tlsfp.SOCKSPreamble(p); n > 0 {
			s.setClient(f, side)
			rest := bytes.Clone(p[n:])
			st.pre = nil
			return rest
		}
	}
	if isHTTP, _ := ja4h.Classify(p); isHTTP {
		s.setClient(f, side)
		st.state = stHTTP
		st.http = s.pool.parser()
		st.pre = nil
		return p
	}
	if off := tlsfp.FindHello(p); off >= 0 {
		return s.startTLS(f, side, st, p[off:])
	}
	// Not recognised yet: keep the bytes, as a later segment may complete a
	// request line, a SOCKS header or a hello, up to scanWindow.
	if len(p) >= scanWindow {
		s.streamDone(f, side, st)
	}
	return nil
}

func (s *Sniffer) startTLS(f *flow, side int, st *stream, b []byte) []byte {
	s.setClient(f, side)
	st.state = stTLS
	st.tls = s.pool.scanner()
	st.pre = nil
	return b
}

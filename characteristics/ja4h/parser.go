package ja4h

import (
	"bytes"
)

// MaxHeaderBlock caps one request's header block (request line included).
// A block that grows past it ends parsing on the flow.
const MaxHeaderBlock = 64 << 10

// maxChunkLine caps a chunk-size line (with extensions) or trailer line.
const maxChunkLine = 4 << 10

// Header is one header field, raw as sent: the name is the bytes before the
// first ':' (untrimmed), the value has its surrounding SP/HT removed and
// folded continuation lines joined with one SP.
type Header struct{ Name, Value []byte }

// Request is one request's header block. Its slices point into the Parser's
// buffer and are valid only during the emit call.
type Request struct {
	Method, Target, Version []byte
	Headers                 []Header
}

type state uint8

const (
	stHeaders   state = iota // reading a header block
	stBody                   // skipping a Content-Length body
	stChunkSize              // reading a chunk-size line
	stChunkData              // skipping chunk data
	stChunkCRLF              // skipping the line end after chunk data
	stTrailers               // reading trailer lines after the last chunk
	stDone
)

// Parser follows one client-to-server HTTP/1.x byte stream and emits each
// request's header block. It accepts CRLF and bare LF, requests split
// anywhere across Feed calls, obsolete line folding, bodies framed by
// Content-Length or chunked coding, and pipelined requests. The zero Parser
// is ready; buffers are kept across Reset.
type Parser struct {
	st      state
	buf     []byte // current header block, or the current chunk/trailer line
	line    int    // start of the current line in buf
	left    int64  // body or chunk bytes still to skip
	req     Request
	started bool // a request line has been seen on this stream
}

// Reset readies p for a new stream, keeping its buffers.
func (p *Parser) Reset() {
	buf, hdrs := p.buf[:0], p.req.Headers[:0]
	*p = Parser{buf: buf}
	p.req.Headers = hdrs
}

// Feed consumes the next contiguous, in-order bytes of the stream and calls
// emit for each complete request header block. It returns done=true once
// parsing has stopped for good: after a CONNECT request's header block (rest
// then holds the bytes of b that follow it, for TLS detection), or when the
// bytes at a request boundary are not an HTTP/1.x request (rest is nil), or a
// header block or chunk line outgrows its cap.
func (p *Parser) Feed(b []byte, emit func(r *Request)) (rest []byte, done bool) {
	for len(b) > 0 && p.st != stDone {
		switch p.st {
		case stHeaders:
			var connect bool
			b, connect = p.feedHeaders(b, emit)
			if connect {
				p.st = stDone
				return b, true
			}
		case stBody, stChunkData:
			n := int64(len(b))
			if n > p.left {
				n = p.left
			}
			b = b[n:]
			p.left -= n
			if p.left == 0 {
				if p.st == stBody {
					p.st = stHeaders
				} else {
					p.st = stChunkCRLF
				}
			}
		case stChunkCRLF:
			// The CRLF (or LF) after chunk data.
			if b[0] == '\r' {
				b = b[1:]
				continue
			}
			if b[0] != '\n' {
				p.st = stDone
				break
			}
			b = b[1:]
			p.st = stChunkSize
		case stChunkSize, stTrailers:
			line, rest, ok := p.readLine(b, maxChunkLine)
			b = rest
			if !ok {
				continue
			}
			p.chunkLine(line)
		}
	}
	return nil, p.st == stDone
}

// readLine accumulates bytes up to and including '\n' in p.buf. It returns
// the line without its line end once complete. Longer lines stop the parser.
func (p *Parser) readLine(b []byte, limit int) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		if len(p.buf)+len(b) > limit {
			p.st = stDone
			return nil, nil, false
		}
		p.buf = append(p.buf, b...)
		return nil, nil, false
	}
	if len(p.buf)+i > limit {
		p.st = stDone
		return nil, nil, false
	}
	if len(p.buf) > 0 {
		p.buf = append(p.buf, b[:i]...)
		line = p.buf
		p.buf = p.buf[:0]
	} else {
		line = b[:i]
	}
	return trimCR(line), b[i+1:], true
}

func trimCR(l []byte) []byte {
	if len(l) > 0 && l[len(l)-1] == '\r' {
		return l[:len(l)-1]
	}
	return l
}

// chunkLine handles one chunk-size or trailer line.
func (p *Parser) chunkLine(line []byte) {
	if p.st == stTrailers {
		if len(line) == 0 {
			p.st = stHeaders // end of the message
		}
		return
	}
	n, ok := parseHex(line)
	switch {
	case !ok:
		p.st = stDone
	case n == 0:
		p.st = stTrailers
	default:
		p.left = n
		p.st = stChunkData
	}
}

// parseHex reads a chunk size (hex digits, then optional ";ext" or BWS).
func parseHex(l []byte) (int64, bool) {
	var n int64
	digits := 0
	for _, c := range l {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		case c == ';' || c == ' ' || c == '\t':
			return n, digits > 0
		default:
			return 0, false
		}
		if digits == 15 {
			return 0, false // over 2^60: not a real chunk
		}
		n = n<<4 | int64(d)
		digits++
	}
	return n, digits > 0
}

// feedHeaders accumulates the header block. It scans b for line ends
// without copying line by line: bytes are appended to p.buf once per call
// (or once per block). It returns the unconsumed bytes, and connect=true
// after a CONNECT block.
func (p *Parser) feedHeaders(b []byte, emit func(*Request)) (rest []byte, connect bool) {
	for len(b) > 0 {
		if len(p.buf) == 0 {
			// At a request boundary: skip empty lines (RFC 9112 §2.2) and
			// reject non-HTTP early, without waiting for a line end that
			// may never come.
			for len(b) > 0 && (b[0] == '\r' || b[0] == '\n') {
				b = b[1:]
			}
			if len(b) == 0 {
				return b, false
			}
			if !maybeMethodStart(b) {
				p.st = stDone
				return nil, false
			}
		}
		// p.buf holds b[:seg] logically; offsets past len(p.buf) are in
		// b[seg:].
		seg, pos := 0, 0
		blockEnd := -1
		for {
			i := bytes.IndexByte(b[pos:], '\n')
			if i < 0 {
				break
			}
			i += pos
			if len(p.buf)+i+1-seg > MaxHeaderBlock {
				p.st = stDone
				return nil, false
			}
			if p.line == 0 {
				// The request line: validate it whole.
				p.buf = append(p.buf, b[seg:i+1]...)
				seg = i + 1
				if _, _, _, ok := splitRequestLine(trimCR(p.buf[:len(p.buf)-1])); !ok {
					p.st = stDone
					return nil, false
				}
				p.line = len(p.buf)
				pos = i + 1
				continue
			}
			end := len(p.buf) + i - seg // offset of the '\n'
			if n := end - p.line; n == 0 || n == 1 && p.byteAt(b, seg, p.line) == '\r' {
				blockEnd = i
				break
			}
			p.line = end + 1
			pos = i + 1
		}
		if blockEnd < 0 {
			if len(p.buf)+len(b)-seg > MaxHeaderBlock {
				p.st = stDone
				return nil, false
			}
			p.buf = append(p.buf, b[seg:]...)
			if p.line == 0 && !maybeMethodStart(p.buf) {
				p.st = stDone
				return nil, false
			}
			return nil, false
		}
		p.buf = append(p.buf, b[seg:blockEnd+1]...)
		b = b[blockEnd+1:]
		isConnect := p.finishBlock(emit)
		p.buf = p.buf[:0]
		p.line = 0
		if isConnect {
			return b, true
		}
		if p.st != stHeaders {
			return b, false // a body follows
		}
	}
	return b, false
}

// byteAt reads the byte at offset v of p.buf followed by b[seg:].
func (p *Parser) byteAt(b []byte, seg, v int) byte {
	if v < len(p.buf) {
		return p.buf[v]
	}
	return b[seg+v-len(p.buf)]
}

// finishBlock parses the complete header block in p.buf, emits it and sets
// up body skipping. It reports a CONNECT request.
func (p *Parser) finishBlock(emit func(*Request)) bool {
	r := &p.req
	r.Headers = r.Headers[:0]
	buf := p.buf
	i := bytes.IndexByte(buf, '\n')
	r.Method, r.Target, r.Version, _ = splitRequestLine(trimCR(buf[:i]))
	pos := i + 1
	for pos < len(buf) {
		j := bytes.IndexByte(buf[pos:], '\n')
		line := trimCR(buf[pos : pos+j])
		pos += j + 1
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			// Obsolete folding: join to the previous value with one SP,
			// moving the continuation left in place. Between the value's end
			// and the continuation lie at least the LF and one SP/HT, so
			// the write never reaches bytes not yet read.
			n := len(r.Headers)
			cont := trimOWS(line)
			if n == 0 || len(cont) == 0 {
				continue
			}
			h := &r.Headers[n-1]
			if len(h.Value) == 0 {
				h.Value = cont
				continue
			}
			start := offset(buf, h.Value)
			end := start + len(h.Value)
			buf[end] = ' '
			copy(buf[end+1:], cont)
			h.Value = buf[start : end+1+len(cont)]
			continue
		}
		c := bytes.IndexByte(line, ':')
		if c <= 0 {
			continue // no colon, or an empty name: ignored
		}
		r.Headers = append(r.Headers, Header{Name: line[:c], Value: trimOWS(line[c+1:])})
	}
	emit(r)
	if asciiEqualFold(r.Method, "connect") {
		return true
	}
	p.bodyFraming()
	return false
}

// offset is where sub, a sub-slice of buf, starts in buf.
func offset(buf, sub []byte) int {
	return cap(buf) - cap(sub)
}

// bodyFraming sets the state for the body of the request just emitted.
func (p *Parser) bodyFraming() {
	var cl []byte
	hasCL, chunked := false, false
	for _, h := range p.req.Headers {
		switch {
		case asciiEqualFold(h.Name, "transfer-encoding"):
			chunked = lastCodingChunked(h.Value)
		case asciiEqualFold(h.Name, "content-length") && !hasCL:
			hasCL, cl = true, h.Value
		}
	}
	switch {
	case chunked:
		p.st = stChunkSize
	case hasCL:
		n, ok := parseDecimal(cl)
		if !ok {
			p.st = stDone // unframed body: we cannot find the next request
			return
		}
		if n > 0 {
			p.left = n
			p.st = stBody
		}
	}
}

func lastCodingChunked(v []byte) bool {
	if i := bytes.LastIndexByte(v, ','); i >= 0 {
		v = v[i+1:]
	}
	return asciiEqualFold(trimOWS(v), "chunked")
}

func parseDecimal(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

func asciiEqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range b {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// isTchar reports an RFC 9110 token character.
func isTchar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), c) >= 0
}

// maxMethodLen bounds a method token; longer means not HTTP.
const maxMethodLen = 32

// maybeMethodStart reports whether b can still begin a request line: a
// token (or empty lines before it) followed by SP. It reads at most
// maxMethodLen+1 bytes.
func maybeMethodStart(b []byte) bool {
	for len(b) > 0 && (b[0] == '\r' || b[0] == '\n') {
		b = b[1:]
	}
	for i, c := range b {
		if c == ' ' {
			return i > 0
		}
		if !isTchar(c) || i >= maxMethodLen {
			return false
		}
	}
	return true
}

// splitRequestLine splits "method SP target SP HTTP/1.d": the method is
// before the first SP, the version after the last; the target between them
// may contain spaces.
func splitRequestLine(l []byte) (method, target, version []byte, ok bool) {
	i := bytes.IndexByte(l, ' ')
	j := bytes.LastIndexByte(l, ' ')
	// The method bound is maybeMethodStart's, so a line is judged the same
	// whether its method arrived whole or in pieces.
	if i <= 0 || i > maxMethodLen || j <= i {
		return nil, nil, nil, false
	}
	method, target, version = l[:i], l[i+1:j], l[j+1:]
	for _, c := range method {
		if !isTchar(c) {
			return nil, nil, nil, false
		}
	}
	if len(version) != 8 || string(version[:7]) != "HTTP/1." || version[7] < '0' || version[7] > '9' {
		return nil, nil, nil, false
	}
	return method, target, version, true
}

// Classify looks at the start of a stream. isHTTP reports an HTTP/1.x request
// line; need reports that b is a plausible prefix and more bytes are needed
// to decide.
func Classify(b []byte) (isHTTP, need bool) {
	for len(b) > 0 && (b[0] == '\r' || b[0] == '\n') {
		b = b[1:]
	}
	if !maybeMethodStart(b) {
		return false, false
	}
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return false, len(b) < MaxHeaderBlock
	}
	_, _, _, ok := splitRequestLine(trimCR(b[:i]))
	return ok, false
}

// LooksLikeRequestLine reports whether b starts with a complete HTTP/1.x
// request line (false while undecided; see Classify).
func LooksLikeRequestLine(b []byte) bool {
	ok, _ := Classify(b)
	return ok
}

package capture

import (
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"slices"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/klauspost/compress/zstd"
)

// Packet is one captured record. Data is valid until the next ReadPacket.
type Packet struct {
	// Frame numbers every record (EPB, SPB, old PB) from 1, like Wireshark's
	// frame.number; it restarts per file. Live sources count from 1 too.
	Frame int
	// Time is the capture time. An SPB carries none: it gets the time of the
	// record before it (the zero Time if none).
	Time          time.Time
	CaptureLength int // len(Data)
	Length        int // length on the wire
	LinkType      layers.LinkType
	// Interface is the pcapng interface of the record within its section
	// (0 for pcap and live sources).
	Interface int
	Data      []byte
}

// set fills every field of p.
func (p *Packet) set(frame int, t time.Time, caplen, length int, lt layers.LinkType, iface int, data []byte) {
	p.Frame, p.Time = frame, t
	p.CaptureLength, p.Length = caplen, length
	p.LinkType, p.Interface = lt, iface
	p.Data = data
}

// Source is a stream of packets; ReadPacket returns io.EOF at the end.
type Source interface {
	ReadPacket(p *Packet) error
	Close() error
}

// Size limits against lying length fields.
const (
	// MaxCaptureLength is the largest record accepted, libpcap's
	// MAXIMUM_SNAPLEN.
	MaxCaptureLength = 262144
	// MaxBlockSize is the largest pcapng block read into memory (packet
	// blocks with their options, section and interface headers). Larger
	// blocks of other types are skipped without being read in.
	MaxBlockSize = 1 << 20
	// maxSkipBlock is the largest block skipped (libpcap's limit).
	maxSkipBlock = 16 << 20
	// bufSize is the read buffer: records that fit are handed out from it.
	bufSize = 64 << 10
)

type format uint8

const (
	formatPcap format = iota + 1
	formatPcapNG
)

// FileSource reads a pcap or pcapng file. It is not safe for concurrent use.
type FileSource struct {
	path   string
	closer []io.Closer
	r      *chunkReader
	off    int64 // bytes consumed from the uncompressed stream
	frame  int
	buf    []byte // records larger than the read buffer
	last   time.Time
	format format

	// pcap
	order     binary.ByteOrder
	nanos     bool
	linkType  layers.LinkType
	recHdrLen int

	// pcapng, for the current section
	ifaces []ngInterface

	mark mark // ReadBatch: where the record being read started
}

// mark is the reading state at the start of a record or block. (s.last
// changes only once a record has been read whole.)
type mark struct {
	r     int
	off   int64
	frame int
}

type ngInterface struct {
	linkType layers.LinkType
	snaplen  uint32
	binary   bool   // resolution is 2^-exp, else 10^-exp
	exp      uint8  // resolution exponent
	div      uint64 // 10^exp when decimal
	offset   int64  // if_tsoffset, seconds
}

// Magic numbers.
const (
	pcapMicro   = 0xa1b2c3d4
	pcapNano    = 0xa1b23c4d
	pcapKuznet  = 0xa1b2cd34 // modified pcap: 24-byte record headers
	ngSHB       = 0x0a0d0d0a
	ngBOM       = 0x1a2b3c4d
	ngIDB       = 1
	ngPB        = 2
	ngSPB       = 3
	ngEPB       = 6
	optEnd      = 0
	optTsresol  = 9
	optTsoffset = 14
)

// OpenFile opens a capture file, detecting its format and compression from
// its first bytes.
func OpenFile(path string) (*FileSource, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	s, err := NewFileSource(path, f)
	if err != nil {
		f.Close()
		return nil, err
	}
	s.closer = append(s.closer, f)
	return s, nil
}

// NewFileSource reads a capture from r; name is used in errors only. Close
// does not close r.
func NewFileSource(name string, r io.Reader) (*FileSource, error) {
	s := &FileSource{path: name}
	br := newChunkReader(r, bufSize)
	magic, err := br.Peek(4)
	if err != nil {
		return nil, s.errorf("reading the magic number: %w", noEOF(err))
	}
	switch {
	case magic[0] == 0x1f && magic[1] == 0x8b:
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, s.errorf("gzip: %w", err)
		}
		s.closer = append(s.closer, zr)
		br = newChunkReader(zr, bufSize)
	case binary.LittleEndian.Uint32(magic) == 0xfd2fb528:
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(1<<30))
		if err != nil {
			return nil, s.errorf("zstd: %w", err)
		}
		s.closer = append(s.closer, closerFunc(func() error { zr.Close(); return nil }))
		br = newChunkReader(zr, bufSize)
	}
	s.r = br
	if err := s.readHeader(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// Close releases the file; it is safe to call more than once.
func (s *FileSource) Close() error {
	var err error
	for i := len(s.closer) - 1; i >= 0; i-- {
		if e := s.closer[i].Close(); e != nil && err == nil {
			err = fmt.Errorf("capture: %s: close: %w", s.path, e)
		}
	}
	s.closer = nil
	return err
}

// LinkType is the link type of a pcap file, or of the first interface of a
// pcapng file (0 before any is described).
func (s *FileSource) LinkType() layers.LinkType {
	if s.format == formatPcapNG {
		if len(s.ifaces) > 0 {
			return s.ifaces[0].linkType
		}
		return 0
	}
	return s.linkType
}

func (s *FileSource) errorf(format string, args ...any) error {
	return fmt.Errorf("capture: %s: byte %d: "+format, append([]any{s.path, s.off}, args...)...)
}

func (s *FileSource) frameErrorf(at int64, format string, args ...any) error {
	return fmt.Errorf("capture: %s: frame %d at byte %d: "+format, append([]any{s.path, s.frame, at}, args...)...)
}

// noEOF turns an EOF in the middle of a structure into ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// read returns the next n bytes (n ≤ MaxBlockSize). Records that fit the
// read buffer are not copied: they stay there until the next read. Larger
// ones are copied into a buffer grown as bytes actually arrive, so a lying
// length in a short file allocates little.
func (s *FileSource) read(n int) ([]byte, error) {
	if n <= s.r.Size() {
		b, err := s.r.Peek(n)
		if err != nil {
			if len(b) > 0 && err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		m, err := s.r.Discard(n)
		s.off += int64(m)
		return b, err
	}
	buf := s.buf[:0]
	for len(buf) < n {
		k := min(n-len(buf), max(len(buf), bufSize))
		buf = slices.Grow(buf, k)
		m, err := io.ReadFull(s.r, buf[len(buf):len(buf)+k])
		buf = buf[:len(buf)+m]
		s.off += int64(m)
		if err != nil {
			return nil, io.ErrUnexpectedEOF
		}
	}
	s.buf = buf
	return buf, nil
}

func (s *FileSource) skip(n int) error {
	m, err := s.r.Discard(n)
	s.off += int64(m)
	return err
}

func (s *FileSource) readHeader() error {
	magic, err := s.r.Peek(4)
	if err != nil {
		return s.errorf("reading the magic number: %w", noEOF(err))
	}
	le, be := binary.LittleEndian.Uint32(magic), binary.BigEndian.Uint32(magic)
	switch {
	case le == ngSHB:
		s.format = formatPcapNG
		return s.readSection()
	case le == pcapMicro || le == pcapNano || le == pcapKuznet:
		s.order = binary.LittleEndian
	case be == pcapMicro || be == pcapNano || be == pcapKuznet:
		s.order = binary.BigEndian
	default:
		return s.errorf("not a pcap or pcapng file (magic %08x)", be)
	}
	s.format = formatPcap
	h, err := s.read(24)
	if err != nil {
		return s.errorf("pcap file header: %w", noEOF(err))
	}
	m := s.order.Uint32(h)
	s.nanos = m == pcapNano
	s.recHdrLen = 16
	if m == pcapKuznet {
		s.recHdrLen = 24
	}
	if major := s.order.Uint16(h[4:]); major != 2 {
		return s.errorf("pcap version %d.%d, want 2.x", major, s.order.Uint16(h[6:]))
	}
	// The top bits of the link type field hold the FCS length.
	s.linkType = layers.LinkType(s.order.Uint32(h[20:]) & 0xffff)
	return nil
}

// ReadPacket reads the next packet record into p. It returns io.EOF after
// the last one.
func (s *FileSource) ReadPacket(p *Packet) error {
	if s.r.pinned {
		s.r.unpin() // leave the last batch's bytes alone
	}
	return s.readPacket(p)
}

func (s *FileSource) readPacket(p *Packet) error {
	if s.format == formatPcapNG {
		return s.readNG(p)
	}
	s.setMark()
	at := s.off
	h, err := s.read(s.recHdrLen)
	if err != nil {
		if err == io.EOF {
			return io.EOF
		}
		s.frame++
		return s.frameErrorf(at, "record header: %w", noEOF(err))
	}
	s.frame++
	sec, frac := s.order.Uint32(h), s.order.Uint32(h[4:])
	caplen, wirelen := s.order.Uint32(h[8:]), s.order.Uint32(h[12:])
	if caplen > MaxCaptureLength {
		return s.frameErrorf(at, "capture length %d exceeds %d", caplen, MaxCaptureLength)
	}
	nsec := int64(frac)
	if !s.nanos {
		nsec *= 1000
	}
	data, err := s.read(int(caplen))
	if err != nil {
		return s.frameErrorf(at, "%d bytes of packet data: %w", caplen, noEOF(err))
	}
	s.last = time.Unix(int64(sec), nsec)
	p.set(s.frame, s.last, int(caplen), int(max(wirelen, caplen)), s.linkType, 0, data)
	return nil
}

// readSection reads a Section Header Block at the current offset.
func (s *FileSource) readSection() error {
	at := s.off
	h, err := s.read(12)
	if err != nil {
		return s.errorf("pcapng section header: %w", noEOF(err))
	}
	switch binary.LittleEndian.Uint32(h[8:]) {
	case ngBOM:
		s.order = binary.LittleEndian
	case 0x4d3c2b1a:
		s.order = binary.BigEndian
	default:
		return s.errorf("pcapng section header: bad byte-order magic %x", h[8:12])
	}
	n := s.order.Uint32(h[4:])
	if n < 28 || n%4 != 0 || n > MaxBlockSize {
		return fmt.Errorf("capture: %s: byte %d: pcapng section header length %d", s.path, at, n)
	}
	body, err := s.read(int(n) - 12)
	if err != nil {
		return s.errorf("pcapng section header: %w", noEOF(err))
	}
	if major := s.order.Uint16(body); major != 1 {
		return fmt.Errorf("capture: %s: byte %d: pcapng version %d, want 1", s.path, at, major)
	}
	if s.order.Uint32(body[len(body)-4:]) != n {
		return fmt.Errorf("capture: %s: byte %d: pcapng section header trailing length differs", s.path, at)
	}
	s.ifaces = s.ifaces[:0]
	return nil
}

func (s *FileSource) readNG(p *Packet) error {
	for {
		s.setMark()
		at := s.off
		h, err := s.r.Peek(8)
		if err != nil {
			if err == io.EOF && len(h) == 0 {
				return io.EOF
			}
			return fmt.Errorf("capture: %s: byte %d: block header: %w", s.path, at, noEOF(err))
		}
		typ := s.order.Uint32(h)
		if typ == ngSHB {
			if err := s.readSection(); err != nil {
				return err
			}
			continue
		}
		n := s.order.Uint32(h[4:])
		if n < 12 || n%4 != 0 {
			return fmt.Errorf("capture: %s: byte %d: block type %#x length %d", s.path, at, typ, n)
		}
		switch typ {
		case ngIDB, ngEPB, ngSPB, ngPB:
		default:
			if n > maxSkipBlock {
				return fmt.Errorf("capture: %s: byte %d: block type %#x length %d exceeds %d", s.path, at, typ, n, maxSkipBlock)
			}
			if err := s.skip(int(n)); err != nil {
				return fmt.Errorf("capture: %s: byte %d: block type %#x: %w", s.path, at, typ, noEOF(err))
			}
			continue
		}
		isPacket := typ != ngIDB
		if isPacket {
			s.frame++
		}
		if n > MaxBlockSize {
			return s.blockErr(isPacket, at, "block type %#x length %d exceeds %d", typ, n, MaxBlockSize)
		}
		b, err := s.read(int(n))
		if err != nil {
			return s.blockErr(isPacket, at, "block type %#x: %w", typ, noEOF(err))
		}
		if s.order.Uint32(b[n-4:]) != n {
			return s.blockErr(isPacket, at, "block type %#x: trailing length differs", typ)
		}
		body := b[8 : n-4]
		if typ == ngIDB {
			if err := s.addInterface(body); err != nil {
				return fmt.Errorf("capture: %s: byte %d: interface %d: %w", s.path, at, len(s.ifaces), err)
			}
			continue
		}
		if err := s.packet(typ, body, p); err != nil {
			return s.frameErrorf(at, "%w", err)
		}
		return nil
	}
}

func (s *FileSource) blockErr(isPacket bool, at int64, format string, args ...any) error {
	if isPacket {
		return s.frameErrorf(at, format, args...)
	}
	return fmt.Errorf("capture: %s: byte %d: "+format, append([]any{s.path, at}, args...)...)
}

var errShortBlock = errors.New("block shorter than its fields")

func (s *FileSource) addInterface(body []byte) error {
	if len(body) < 8 {
		return errShortBlock
	}
	if len(s.ifaces) >= 1<<16 {
		return errors.New("more than 65536 interfaces in one section")
	}
	in := ngInterface{linkType: layers.LinkType(s.order.Uint16(body)), snaplen: s.order.Uint32(body[4:]), exp: 6, div: 1e6}
	opts := body[8:]
	for len(opts) >= 4 {
		code, l := s.order.Uint16(opts), int(s.order.Uint16(opts[2:]))
		opts = opts[4:]
		if code == optEnd {
			break
		}
		if l > len(opts) {
			return fmt.Errorf("option %d length %d beyond the block", code, l)
		}
		v := opts[:l]
		opts = opts[min(len(opts), (l+3)&^3):]
		switch {
		case code == optTsresol && l == 1:
			r := v[0]
			in.binary, in.exp = r&0x80 != 0, r&0x7f
			if in.binary && in.exp > 63 || !in.binary && in.exp > 19 {
				return fmt.Errorf("if_tsresol %#x out of range", r)
			}
			in.div = 1
			if !in.binary {
				for range in.exp {
					in.div *= 10
				}
			}
		case code == optTsoffset && l == 8:
			in.offset = int64(s.order.Uint64(v))
		}
	}
	s.ifaces = append(s.ifaces, in)
	return nil
}

// timestamp converts a pcapng timestamp of interface in to a time.
func (in *ngInterface) timestamp(ts uint64) time.Time {
	var sec, nsec uint64
	if in.binary {
		sec = ts >> in.exp
		frac := ts & (1<<in.exp - 1)
		hi, lo := bits.Mul64(frac, 1e9)
		if in.exp == 0 {
			nsec = 0
		} else {
			nsec = hi<<(64-in.exp) | lo>>in.exp
		}
	} else {
		sec, nsec = ts/in.div, ts%in.div
		if in.exp <= 9 {
			for range 9 - in.exp {
				nsec *= 10
			}
		} else {
			for range in.exp - 9 {
				nsec /= 10
			}
		}
	}
	return time.Unix(int64(sec)+in.offset, int64(nsec))
}

func (s *FileSource) packet(typ uint32, body []byte, p *Packet) error {
	var (
		ifidx           int
		ts              uint64
		caplen, wirelen uint32
		data            []byte
		hasTime                = true
		fieldsLen       uint32 = 20
	)
	switch typ {
	case ngEPB, ngPB:
		if len(body) < 20 {
			return errShortBlock
		}
		if typ == ngEPB {
			ifidx = int(s.order.Uint32(body))
		} else {
			ifidx = int(s.order.Uint16(body))
		}
		ts = uint64(s.order.Uint32(body[4:]))<<32 | uint64(s.order.Uint32(body[8:]))
		caplen, wirelen = s.order.Uint32(body[12:]), s.order.Uint32(body[16:])
		if uint64(caplen) > uint64(len(body)-20) {
			return fmt.Errorf("capture length %d beyond the block", caplen)
		}
		data = body[fieldsLen : fieldsLen+caplen]
	case ngSPB:
		if len(body) < 4 {
			return errShortBlock
		}
		hasTime = false
		wirelen = s.order.Uint32(body)
		caplen = min(wirelen, uint32(len(body)-4))
		if len(s.ifaces) > 0 && s.ifaces[0].snaplen != 0 {
			caplen = min(caplen, s.ifaces[0].snaplen)
		}
		data = body[4 : 4+caplen]
	}
	if ifidx >= len(s.ifaces) {
		return fmt.Errorf("interface %d not described (%d interfaces in the section)", ifidx, len(s.ifaces))
	}
	if caplen > MaxCaptureLength {
		return fmt.Errorf("capture length %d exceeds %d", caplen, MaxCaptureLength)
	}
	in := &s.ifaces[ifidx]
	if hasTime {
		s.last = in.timestamp(ts)
	}
	p.set(s.frame, s.last, int(caplen), int(max(wirelen, caplen)), in.linkType, ifidx, data[:caplen:caplen])
	return nil
}

// Batch is packets read together by FileSource.ReadBatch, with the buffer
// their Data point into. A Batch is reused: each ReadBatch overwrites it.
type Batch struct {
	Packets []Packet
	buf     []byte
}

// The buffer of a Batch starts at batchBufSize, which one read system call
// fills, and doubles when a record does not fit, up to batchBufMax, which
// holds any record (MaxBlockSize) and the bytes before it.
const (
	batchBufSize = 256 << 10
	batchBufMax  = 2 * MaxBlockSize
)

// NewBatch returns a Batch for up to n packets (at least 1).
func NewBatch(n int) *Batch {
	return &Batch{Packets: make([]Packet, 0, max(n, 1))}
}

// ReadBatch reads up to cap(b.Packets) packets into b.Packets. The file is
// read with large reads straight into b's buffer, and each packet's Data
// points there: no copy, and Data stays valid until b is passed to ReadBatch
// again (other Batches, and ReadPacket, leave it alone). It returns the error
// that ended the file (io.EOF at the end) with the packets before it.
// Batches can be read on one goroutine and used on another.
func (s *FileSource) ReadBatch(b *Batch) error {
	if len(b.buf) < batchBufSize {
		b.buf = make([]byte, batchBufSize)
	}
	s.r.pin(b.buf)
	b.Packets = b.Packets[:0]
	for len(b.Packets) < cap(b.Packets) {
		n := len(b.Packets)
		b.Packets = b.Packets[:n+1]
		err := s.readPacket(&b.Packets[n])
		if err == nil {
			continue
		}
		b.Packets = b.Packets[:n]
		if !errors.Is(err, errChunkFull) {
			return err
		}
		s.rewind()
		if n > 0 {
			return nil // the record goes first in the next batch
		}
		if len(b.buf) >= batchBufMax {
			return fmt.Errorf("capture: %s: byte %d: a record larger than %d bytes", s.path, s.off, batchBufMax)
		}
		// A record larger than the buffer: grow it.
		b.buf = make([]byte, min(2*len(b.buf), batchBufMax))
		s.r.pin(b.buf)
	}
	return nil
}

func (s *FileSource) setMark() {
	s.mark.r, s.mark.off, s.mark.frame = s.r.r, s.off, s.frame
}

// rewind goes back to the start of the record a batch had no room for.
func (s *FileSource) rewind() {
	s.r.r, s.off, s.frame = s.mark.r, s.mark.off, s.mark.frame
}

package nginxlog

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// DefaultMaxLine is the longest line a Reader returns whole by default.
const DefaultMaxLine = 64 << 10

// ReaderConfig configures a Reader. The zero value means the defaults.
type ReaderConfig struct {
	// MaxLine is the longest line returned whole; a longer line is returned
	// cut to MaxLine bytes and flagged (Truncated). 0 means DefaultMaxLine.
	MaxLine int
}

// Reader reads the lines of one log file, plain, gzip or zstd (told apart by
// their magic bytes, not by the name; concatenated gzip members or zstd frames
// are read as one stream). It is not safe for concurrent use.
type Reader struct {
	name   string
	closer io.Closer
	gz     *gzip.Reader
	zst    *zstd.Decoder
	src    io.Reader

	buf       []byte
	r, w      int   // buf[r:w] is read but not yet returned
	err       error // sticky error of src, io.EOF at the end
	max       int
	line      int
	truncated bool // the line last returned was cut
	skipping  bool // discarding the rest of a cut line
	ntrunc    int
}

// Open opens the file at path with the default configuration.
func Open(path string) (*Reader, error) { return OpenConfig(path, ReaderConfig{}) }

// OpenConfig opens the file at path.
func OpenConfig(path string, cfg ReaderConfig) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("nginxlog: %w", err)
	}
	r, err := NewReader(f, path, cfg)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.closer = f
	return r, nil
}

// NewReader reads lines from src, which it does not close; name is used in
// errors. It reads the first bytes of src to tell gzip and zstd from plain
// text.
func NewReader(src io.Reader, name string, cfg ReaderConfig) (*Reader, error) {
	if cfg.MaxLine < 0 {
		return nil, fmt.Errorf("nginxlog: MaxLine %d is negative", cfg.MaxLine)
	}
	limit := cfg.MaxLine
	if limit == 0 {
		limit = DefaultMaxLine
	}
	r := &Reader{name: name, max: limit, buf: make([]byte, max(256<<10, 2*limit))}
	br := bufio.NewReaderSize(src, 64<<10)
	magic, _ := br.Peek(4)
	r.src = br
	switch {
	case len(magic) >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("nginxlog: %s: %w", name, err)
		}
		r.gz, r.src = gz, gz
	case len(magic) == 4 && magic[0] == 0x28 && magic[1] == 0xb5 && magic[2] == 0x2f && magic[3] == 0xfd:
		// One goroutine: replay already keeps the cores busy with one
		// reader per file.
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(1<<30))
		if err != nil {
			return nil, fmt.Errorf("nginxlog: %s: %w", name, err)
		}
		r.zst, r.src = zr, zr
	}
	return r, nil
}

// Name returns the name the Reader was opened with.
func (r *Reader) Name() string { return r.name }

// Line returns the 1-based number of the line last returned by Next.
func (r *Reader) Line() int { return r.line }

// Truncated reports whether the line last returned was longer than MaxLine
// and cut to it.
func (r *Reader) Truncated() bool { return r.truncated }

// TruncatedLines returns how many lines have been cut so far.
func (r *Reader) TruncatedLines() int { return r.ntrunc }

// skipCut discards the rest of a line cut at MaxLine, up to and including
// its newline (or to the end of the input).
func (r *Reader) skipCut() {
	for r.skipping {
		if i := bytes.IndexByte(r.buf[r.r:r.w], '\n'); i >= 0 {
			r.r += i + 1
			r.skipping = false
			return
		}
		r.r = r.w
		if r.err != nil {
			r.skipping = false
			return
		}
		r.fill()
	}
}

// Next returns the next line without its "\n" (or "\r\n"). The line is valid
// until the next call, and the caller may modify it (Parse does). At the end it
// returns io.EOF; a last line without a newline is still returned.
func (r *Reader) Next() ([]byte, error) {
	r.truncated = false
	r.skipCut()
	for {
		if i := bytes.IndexByte(r.buf[r.r:r.w], '\n'); i >= 0 {
			line := r.buf[r.r : r.r+i]
			r.r += i + 1
			return r.found(line, false), nil
		}
		if r.w-r.r > r.max {
			line := r.buf[r.r : r.r+r.max]
			r.r += r.max
			r.skipping = true
			return r.found(line, true), nil
		}
		if r.err != nil {
			if r.r < r.w {
				line := r.buf[r.r:r.w]
				r.r = r.w
				return r.found(line, false), nil
			}
			if r.err == io.EOF {
				return nil, io.EOF
			}
			return nil, fmt.Errorf("nginxlog: %s: after line %d: %w", r.name, r.line, r.err)
		}
		r.fill()
	}
}

func (r *Reader) found(line []byte, cut bool) []byte {
	r.line++
	if len(line) > r.max {
		line, cut = line[:r.max], true
	}
	if cut {
		r.truncated = true
		r.ntrunc++
	} else if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line
}

// fill moves the unread bytes to the front of buf and reads more.
func (r *Reader) fill() {
	if r.r > 0 {
		r.w = copy(r.buf, r.buf[r.r:r.w])
		r.r = 0
	}
	for tries := 0; r.w < len(r.buf) && tries < 100; tries++ {
		n, err := r.src.Read(r.buf[r.w:])
		r.w += n
		if err != nil {
			r.err = err
			return
		}
		if n > 0 {
			return
		}
	}
	if r.w < len(r.buf) {
		r.err = io.ErrNoProgress
	}
}

// MaxLine returns the longest line the Reader returns whole.
func (r *Reader) MaxLine() int { return r.max }

// ReadBlock reads whole lines straight into dst, saving the copies Next and a
// batch of its lines make: one goroutine can read a file as fast as the disk
// gives it while others split and parse the blocks. It returns the bytes of
// dst written and the lines they hold; every line in dst[:n] ends with '\n'
// (a last line without one is given one), and SplitLine with MaxLine splits
// them into exactly the lines Next would have returned. A line too long for
// dst is handed over with MaxLine+1 of its bytes, which SplitLine cuts, and
// the rest is skipped. dst must hold at least MaxLine+2 bytes.
//
// At the end it returns io.EOF with n == 0; a read error comes after the
// lines read before it, on a call that returns no line, as with Next. Next
// and ReadBlock may be mixed. TruncatedLines counts only the lines too long
// for dst among those ReadBlock returned.
func (r *Reader) ReadBlock(dst []byte) (n, lines int, err error) {
	if len(dst) < r.max+2 {
		return 0, 0, fmt.Errorf("nginxlog: %s: ReadBlock into %d bytes, under MaxLine+2", r.name, len(dst))
	}
	r.truncated = false
	r.skipCut()
	// One byte is kept free for the '\n' of a last line without one.
	room := dst[:len(dst)-1]
	n = copy(room, r.buf[r.r:r.w])
	r.r += n
	if r.r == r.w {
		r.r, r.w = 0, 0
		for tries := 0; r.err == nil && n < len(room); {
			m, err := r.src.Read(room[n:])
			n += m
			if err != nil {
				r.err = err
			} else if m == 0 {
				if tries++; tries == 100 {
					r.err = io.ErrNoProgress
				}
			}
		}
	}
	end := bytes.LastIndexByte(dst[:n], '\n') + 1
	lines = bytes.Count(dst[:end], []byte{'\n'})
	switch tail := n - end; {
	case tail == 0:
	case r.err != nil && r.r == r.w:
		// The source ended (or failed) in a line: it is the last one.
		if tail > r.max+1 {
			tail = r.max + 1 // SplitLine cuts it
		}
		dst[end+tail] = '\n'
		end += tail + 1
		lines++
	case end == 0:
		// No '\n' in a full dst: a line longer than it.
		dst[r.max+1] = '\n'
		end = r.max + 2
		lines = 1
		r.skipping = true
		r.ntrunc++
	case r.r > 0:
		// dst was filled from buf alone: the tail is still there.
		r.r -= tail
	default:
		if tail > len(r.buf) {
			r.buf = make([]byte, tail) // a line longer than buf: rare
		}
		r.w = copy(r.buf, dst[end:n])
	}
	r.line += lines
	if lines > 0 {
		return end, lines, nil
	}
	if r.err == io.EOF {
		return 0, 0, io.EOF
	}
	return 0, 0, fmt.Errorf("nginxlog: %s: after line %d: %w", r.name, r.line, r.err)
}

// SplitLine returns the first line of block, a run of lines ended by '\n'
// (ReadBlock's), as Next with that MaxLine returns it: without its "\n" or
// "\r\n", cut to max bytes when longer (and then not trimmed); cut reports
// that. rest is the block after the line. A block without '\n' is one line.
func SplitLine(block []byte, max int) (line, rest []byte, cut bool) {
	i := bytes.IndexByte(block, '\n')
	if i < 0 {
		line = block
	} else {
		line, rest = block[:i], block[i+1:]
	}
	if len(line) > max {
		return line[:max], rest, true
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, rest, false
}

// Close closes the file opened by Open; it is safe to call more than once.
func (r *Reader) Close() error {
	var err error
	if r.gz != nil {
		err = r.gz.Close()
		r.gz = nil
	}
	if r.zst != nil {
		r.zst.Close()
		r.zst = nil
	}
	if r.closer != nil {
		if cerr := r.closer.Close(); err == nil {
			err = cerr
		}
		r.closer = nil
	}
	return err
}

// Batch is a reusable block of lines that can be handed to another goroutine:
// one byte arena holding the lines back to back, their ends and their line
// numbers. Its lines are valid until the next ReadBatch into it.
type Batch struct {
	data  []byte
	ends  []int32
	first int
	cut   []int32 // indices of truncated lines
}

// Len returns the number of lines in b.
func (b *Batch) Len() int { return len(b.ends) }

// Line returns line i of b. The caller may modify it in place (Parse does) but
// not append to it.
func (b *Batch) Line(i int) []byte {
	start := int32(0)
	if i > 0 {
		start = b.ends[i-1]
	}
	return b.data[start:b.ends[i]:b.ends[i]]
}

// LineNumber returns the 1-based number in its file of line i of b.
func (b *Batch) LineNumber(i int) int { return b.first + i }

// Truncated reports whether line i of b was cut to the Reader's MaxLine.
func (b *Batch) Truncated(i int) bool {
	for _, c := range b.cut {
		if int(c) == i {
			return true
		}
	}
	return false
}

// Bytes returns the total size of the lines in b.
func (b *Batch) Bytes() int { return len(b.data) }

// ReadBatch replaces the contents of b with up to max next lines (at least
// one), copied into b's arena, which is reused. It returns io.EOF, with b
// empty, when no line is left; a read error comes after the lines read before
// it, on a call that returns no line.
func (r *Reader) ReadBatch(b *Batch, max int) error {
	b.data, b.ends, b.cut = b.data[:0], b.ends[:0], b.cut[:0]
	b.first = r.line + 1
	if max < 1 {
		max = 1
	}
	for len(b.ends) < max {
		line, err := r.Next()
		if err != nil {
			if len(b.ends) > 0 {
				return nil // the error comes again on the next call
			}
			return err
		}
		if len(b.data)+len(line) > 1<<31-1 {
			return fmt.Errorf("nginxlog: %s: batch over 2 GiB", r.name)
		}
		if r.truncated {
			b.cut = append(b.cut, int32(len(b.ends)))
		}
		b.data = append(b.data, line...)
		b.ends = append(b.ends, int32(len(b.data)))
	}
	return nil
}

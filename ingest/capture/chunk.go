package capture

import (
	"errors"
	"io"
)

// errChunkFull is what a pinned chunkReader returns when a record does not
// fit in the rest of its buffer: ReadBatch ends the batch there and starts
// the next one with that record.
var errChunkFull = errors.New("capture: batch buffer full")

// maxEmptyReads is how many reads returning nothing and no error a
// chunkReader accepts in a row, as bufio does.
const maxEmptyReads = 100

// chunkReader buffers FileSource's reader like a bufio.Reader: Peek hands out
// slices of its buffer without copying. It has one more mode for ReadBatch:
// while pinned to a batch's buffer, the bytes it handed out stay where they
// are (the batch's packets point into them), so it reads on into the rest of
// that buffer and returns errChunkFull when a record does not fit.
type chunkReader struct {
	rd     io.Reader
	buf    []byte // buf[r:w] are read and not yet consumed
	r, w   int
	err    error // from rd, returned (and cleared) by the next Peek or Read
	pinned bool
	own    []byte // the buffer used when not pinned
}

func newChunkReader(rd io.Reader, size int) *chunkReader {
	own := make([]byte, size)
	return &chunkReader{rd: rd, buf: own, own: own}
}

// Size is the most Peek can return.
func (c *chunkReader) Size() int { return len(c.buf) }

// fill reads until n bytes are buffered, rd fails or the buffer is full.
func (c *chunkReader) fill(n int) {
	if !c.pinned && c.r > 0 && len(c.buf)-c.r < n {
		c.w = copy(c.buf, c.buf[c.r:c.w])
		c.r = 0
	}
	for empty := 0; c.w-c.r < n && c.err == nil && c.w < len(c.buf); {
		m, err := c.rd.Read(c.buf[c.w:])
		if m < 0 || m > len(c.buf)-c.w {
			c.err = errors.New("capture: reader returned an impossible count")
			return
		}
		c.w += m
		c.err = err
		if m > 0 || err != nil {
			empty = 0
		} else if empty++; empty >= maxEmptyReads {
			c.err = io.ErrNoProgress
		}
	}
}

// Peek returns the next n bytes without consuming them, valid until the next
// Peek or Read (or, pinned, until the buffer is reused). With fewer, it
// returns what there is and the reader's error, or errChunkFull when pinned
// and out of room.
func (c *chunkReader) Peek(n int) ([]byte, error) {
	if c.w-c.r < n {
		c.fill(n)
		if c.w-c.r < n {
			if err := c.readErr(); err != nil {
				return c.buf[c.r:c.w], err
			}
			return c.buf[c.r:c.w], errChunkFull
		}
	}
	return c.buf[c.r : c.r+n : c.r+n], nil
}

// readErr returns the error from rd once, as bufio does: a later read tries
// rd again (a capture still being written may have grown).
func (c *chunkReader) readErr() error {
	err := c.err
	c.err = nil
	return err
}

// Discard skips n bytes, reading past the buffer without keeping them.
func (c *chunkReader) Discard(n int) (int, error) {
	k := min(n, c.w-c.r)
	c.r += k
	if k == n {
		return n, nil
	}
	if err := c.readErr(); err != nil {
		return k, err
	}
	m, err := io.CopyN(io.Discard, c.rd, int64(n-k))
	return k + int(m), err
}

// Read reads what is buffered, or else straight from rd.
func (c *chunkReader) Read(p []byte) (int, error) {
	if c.r < c.w {
		n := copy(p, c.buf[c.r:c.w])
		c.r += n
		return n, nil
	}
	if err := c.readErr(); err != nil {
		return 0, err
	}
	return c.rd.Read(p)
}

// pin makes buf the buffer, moving the unconsumed bytes to its start: the
// bytes handed out from now on stay in buf until the next pin or unpin. buf
// must hold the unconsumed bytes (a batch buffer holds any record).
func (c *chunkReader) pin(buf []byte) {
	buf = buf[:cap(buf)]
	c.w = copy(buf, c.buf[c.r:c.w])
	c.buf, c.r, c.pinned = buf, 0, true
}

// unpin goes back to the reader's own buffer, grown if the unconsumed bytes
// need it.
func (c *chunkReader) unpin() {
	if n := c.w - c.r; n > len(c.own) {
		c.own = make([]byte, n)
	}
	c.pin(c.own)
	c.pinned = false
}

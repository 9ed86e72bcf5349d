package syslog

import (
	"bufio"
	"errors"
	"io"
)

// Errors of a Framer. ErrFrameTooLong is counted and the frame skipped;
// ErrFraming means the stream cannot be followed any more.
var (
	ErrFrameTooLong = errors.New("syslog: frame longer than the maximum message")
	ErrFraming      = errors.New("syslog: bad octet count")
)

// maxSkip is the longest octet-counted frame a Framer skips over rather
// than ending the stream: beyond it the count is taken for garbage.
const maxSkip = 16 << 20

// Framer splits a stream into messages as RFC 6587 frames them, telling the
// two methods apart at each frame: octet counting ("LEN SP MSG") when the
// frame starts with a digit, non-transparent framing (MSG ended by LF) when
// it starts with anything else ('<'). It is not safe for concurrent use.
type Framer struct {
	r   *bufio.Reader
	max int
	buf []byte
}

// NewFramer reads frames of at most max bytes from r.
func NewFramer(r io.Reader, max int) *Framer {
	return &Framer{r: bufio.NewReaderSize(r, max+16), max: max, buf: make([]byte, max)}
}

// Next returns the next frame's message, valid until the next call. It
// returns io.EOF at a clean end of the stream, ErrFrameTooLong for a frame
// over the maximum (skipped: call Next again), and ErrFraming or a read
// error when the stream cannot be followed.
func (f *Framer) Next() ([]byte, error) {
	for {
		c, err := f.r.ReadByte()
		if err != nil {
			return nil, err
		}
		switch {
		case c == '\n' || c == '\r' || c == ' ' || c == 0:
			continue // blank between frames
		case c >= '1' && c <= '9':
			return f.counted(int(c - '0'))
		default:
			f.r.UnreadByte()
			return f.line()
		}
	}
}

func (f *Framer) counted(n int) ([]byte, error) {
	for digits := 1; ; digits++ {
		c, err := f.r.ReadByte()
		if err != nil {
			return nil, unexpected(err)
		}
		if c == ' ' {
			break
		}
		if c < '0' || c > '9' || digits >= 9 {
			return nil, ErrFraming
		}
		n = n*10 + int(c-'0')
	}
	if n > f.max {
		if n > maxSkip {
			return nil, ErrFraming
		}
		if _, err := f.r.Discard(n); err != nil {
			return nil, unexpected(err)
		}
		return nil, ErrFrameTooLong
	}
	if _, err := io.ReadFull(f.r, f.buf[:n]); err != nil {
		return nil, unexpected(err)
	}
	return f.buf[:n], nil
}

func (f *Framer) line() ([]byte, error) {
	b, err := f.r.ReadSlice('\n')
	switch {
	case err == nil:
		if len(b)-1 > f.max {
			return nil, ErrFrameTooLong
		}
		return b[:len(b)-1], nil
	case errors.Is(err, bufio.ErrBufferFull):
		// Skip to the end of the line.
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = f.r.ReadSlice('\n')
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		return nil, ErrFrameTooLong
	case errors.Is(err, io.EOF) && len(b) > f.max:
		// The last frame, unterminated and too long (the reader's buffer
		// holds a little more than the maximum).
		return nil, ErrFrameTooLong
	case errors.Is(err, io.EOF) && len(b) > 0:
		// The last frame, unterminated: the sender closed after it.
		return b, nil
	}
	return nil, err
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

package pipe

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// DefaultMaxLine is the longest line handed over whole by default.
const DefaultMaxLine = 64 << 10

// Writer is what Read hands lines to: pipeline.Writer.
type Writer interface {
	Line(data []byte, file string, line int64) error
	Mark(m any) error
}

// Stats are a Reader's counters, safe to read at any time.
type Stats struct {
	Lines, Bytes, CutLines atomic.Int64
}

// Reader reads one stream. Create it with New and call Read once.
type Reader struct {
	r       io.Reader
	name    string
	maxLine int
	Stats   Stats
}

// New reads r, named name in errors; maxLine 0 means DefaultMaxLine.
func New(r io.Reader, name string, maxLine int) *Reader {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	return &Reader{r: r, name: name, maxLine: maxLine}
}

// StdinFile returns standard input in non-blocking mode, so that Read can
// interrupt it when its context ends.
func StdinFile() *os.File {
	if err := syscall.SetNonblock(int(os.Stdin.Fd()), true); err != nil {
		return os.Stdin
	}
	return os.NewFile(os.Stdin.Fd(), "stdin")
}

type deadliner interface{ SetReadDeadline(time.Time) error }

// Read hands the stream's lines to w until it ends (nil), ctx ends (nil) or
// w fails (its error).
func (p *Reader) Read(ctx context.Context, w Writer) error {
	if d, ok := p.r.(deadliner); ok {
		stop := context.AfterFunc(ctx, func() { d.SetReadDeadline(time.Unix(1, 0)) })
		defer stop()
	}
	buf := make([]byte, max(256<<10, 2*p.maxLine))
	var (
		have     int   // bytes in buf not yet handed over
		num      int64 // lines so far
		skipping bool  // inside a cut line
	)
	for {
		n, err := p.r.Read(buf[have:])
		have += n
		p.Stats.Bytes.Add(int64(n))
		data := buf[:have]
		lines := 0
		for {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				break
			}
			line := data[:i]
			data = data[i+1:]
			if skipping {
				skipping = false
				continue
			}
			num++
			lines++
			if len(line) > p.maxLine {
				line = line[:p.maxLine]
				p.Stats.CutLines.Add(1)
			}
			if werr := w.Line(bytes.TrimSuffix(line, []byte{'\r'}), p.name, num); werr != nil {
				return quiet(ctx, werr)
			}
		}
		if len(data) > p.maxLine && !skipping {
			// An over-long line: hand over its start, skip the rest.
			num++
			lines++
			p.Stats.CutLines.Add(1)
			if werr := w.Line(data[:p.maxLine], p.name, num); werr != nil {
				return quiet(ctx, werr)
			}
			skipping = true
		}
		if skipping {
			data = data[:0]
		}
		have = copy(buf, data)
		if lines > 0 {
			p.Stats.Lines.Add(int64(lines))
			if werr := w.Mark(nil); werr != nil {
				return quiet(ctx, werr)
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			if have > 0 && !skipping { // an unterminated last line is whole
				num++
				p.Stats.Lines.Add(1)
				if werr := w.Line(buf[:have], p.name, num); werr != nil {
					return quiet(ctx, werr)
				}
				return quiet(ctx, w.Mark(nil))
			}
			return nil
		case ctx.Err() != nil:
			return nil
		default:
			return err
		}
	}
}

func quiet(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

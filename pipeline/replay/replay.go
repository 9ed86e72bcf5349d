package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/guardd/guardd/ingest/nginxlog"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/pipeline"
)

// Config configures Run.
type Config struct {
	Pipeline *pipeline.Pipeline // required; Run takes over its reference
	// Report receives the mitigations made and, if it keeps them, the
	// clients' impact; nil keeps only Stats.
	Report *pipeline.Report
	Join   pipeline.Joiner // optional
	// Workers parsing and evaluating in parallel; 0 means GOMAXPROCS.
	Workers int
	// Progress, if set, is called about ten times a second and at the end.
	Progress func(Progress)
	Logger   *slog.Logger
	// MaxErrors is how many malformed lines are logged one by one; 0 means 10.
	MaxErrors int
	// Now is the wall clock that event times are bounded by; nil means
	// time.Now.
	Now func() time.Time
	// Stdin is read for the path "-"; nil means os.Stdin.
	Stdin io.Reader
}

// Progress is a snapshot of a running replay.
type Progress struct {
	File            string
	FileIndex       int // 0-based
	Files           int
	Lines           int64
	Malformed       int64
	Elapsed         time.Duration
	Done            bool
	FileBytes, Read int64 // size and bytes read of the current file (plain files; 0 for gzip)
}

// Stats summarises a replay.
type Stats struct {
	pipeline.Stats
	Files   int64
	Elapsed time.Duration
	// FileErrors are the files that could not be read to their end (a
	// corrupt gzip stream, a read error); the lines before the damage were
	// replayed, and so were the other files.
	FileErrors []error
}

// ErrNoEvents is returned when lines were read but none could be parsed:
// most likely the log format does not match the file.
var ErrNoEvents = errors.New("replay: no line could be parsed")

// Run replays paths in order and returns when all are done or ctx ends.
// The path "-" is standard input (Config.Stdin).
// A file that cannot be opened ends the replay with an error; a file damaged
// part way loses only its own tail, reported in Stats.FileErrors.
func Run(ctx context.Context, cfg Config, paths []string) (Stats, error) {
	if cfg.Pipeline == nil {
		return Stats{}, errors.New("replay: no pipeline")
	}
	holder := pipeline.NewHolder(cfg.Pipeline)
	defer holder.Close()
	start := time.Now()
	store, err := mitigation.New(mitigation.Config{MaxEntries: 1 << 30}, nil, nil)
	if err != nil {
		return Stats{}, fmt.Errorf("replay: %w", err)
	}
	defer store.Close()
	src := &files{paths: paths, stdin: cfg.Stdin}
	if src.stdin == nil {
		src.stdin = os.Stdin
	}
	var malformed atomic.Int64
	report := func(final bool) {
		if cfg.Progress == nil {
			return
		}
		fi := int(src.index.Load())
		pr := Progress{FileIndex: fi, Files: len(paths), Lines: src.lines.Load(), Malformed: malformed.Load(),
			Elapsed: time.Since(start), Done: final, Read: src.read.Load()}
		if fi < len(paths) {
			pr.File = paths[fi]
		}
		cfg.Progress(pr)
	}
	stop := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				report(false)
			}
		}
	}()
	pst, err := pipeline.Run(ctx, pipeline.Config{
		Pipelines: holder, Store: store, Join: cfg.Join, Workers: cfg.Workers, Replay: true, Now: cfg.Now,
		Report: cfg.Report, Logger: cfg.Logger, MaxErrors: cfg.MaxErrors,
		Applied: func(_ any, st *pipeline.Stats) { malformed.Store(st.Malformed) },
	}, src)
	close(stop)
	<-ticked
	malformed.Store(pst.Malformed)
	st := Stats{Stats: pst, Files: int64(len(paths)), Elapsed: time.Since(start), FileErrors: src.errs}
	report(true)
	if err != nil {
		return st, err
	}
	if st.Lines > 0 && st.Events == 0 {
		first := ""
		if len(st.Errors) > 0 {
			first = "; first: " + st.Errors[0].Error()
		}
		return st, fmt.Errorf("%w: all %d lines malformed (does the log format match the files?)%s", ErrNoEvents, st.Lines, first)
	}
	return st, nil
}

// files is the Source of a replay: the files in order, each marked when
// done so progress follows.
type files struct {
	paths              []string
	stdin              io.Reader // read for "-"
	index, lines, read atomic.Int64
	errs               []error // read by Run after the source ends
}

func (f *files) Read(ctx context.Context, w *pipeline.Writer) error {
	for i, p := range f.paths {
		f.index.Store(int64(i))
		if err := f.readFile(ctx, p, w); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var damaged *damagedError
			if !errors.As(err, &damaged) {
				return err
			}
			f.errs = append(f.errs, damaged.err)
		}
	}
	return nil
}

type damagedError struct{ err error }

func (e *damagedError) Error() string { return e.err.Error() }

func (f *files) readFile(ctx context.Context, path string, w *pipeline.Writer) error {
	var r *nginxlog.Reader
	var err error
	if path == "-" {
		// Standard input, plain or compressed like a file, named "stdin" in
		// errors; it is read once, so give "-" once.
		path = "stdin"
		r, err = nginxlog.NewReader(f.stdin, path, nginxlog.ReaderConfig{})
	} else {
		r, err = nginxlog.Open(path)
	}
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	defer r.Close()
	// The file is read in blocks straight into the batches, which the
	// workers split into lines: this goroutine does no work per line.
	room := r.MaxLine() + 2
	for {
		buf, err := w.Buffer(room)
		if err != nil {
			return err
		}
		first := int64(r.Line()) + 1
		n, lines, err := r.ReadBlock(buf)
		if err == io.EOF {
			return w.Mark(nil)
		}
		if err != nil {
			w.Mark(nil)
			return &damagedError{fmt.Errorf("replay: %s: after line %d: %w", path, r.Line(), err)}
		}
		if err := w.Block(n, lines, path, first, r.MaxLine()); err != nil {
			return err
		}
		// Progress is read ten times a second; a block is some 2,000 lines.
		f.lines.Add(int64(lines))
		f.read.Add(int64(n))
	}
}

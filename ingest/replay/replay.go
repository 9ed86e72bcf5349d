package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/ingest/nginxlog"
	"github.com/guardd/guardd/rules/engine"
)

// Joiner attaches fingerprints sniffed from the same connection to an event.
type Joiner interface {
	Enrich(e *characteristics.Event) bool
}

// Config configures Run.
type Config struct {
	Engine   *engine.Engine            // required
	Enricher *characteristics.Enricher // nil: /24 and /64 prefixes, no proxies, no ASN
	// Format parses log lines; nil means nginx's combined format. With JSON
	// set, lines are JSON objects keyed by nginx variable names instead.
	Format *nginxlog.Format
	JSON   bool
	Join   Joiner // optional
	// Workers parsing and evaluating in parallel; 0 means GOMAXPROCS.
	Workers int
	// Progress, if set, is called about ten times a second and at the end.
	Progress func(Progress)
	Logger   *slog.Logger
	// MaxErrors is how many malformed lines are logged one by one; 0 means 10.
	MaxErrors int
	// OnMitigated, if set, is called on the sequencer for every request an
	// active mitigation applied to, with the client address and event time.
	OnMitigated func(client netip.Addr, t time.Time)
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
	Files, Lines, Malformed, Events, Mitigated int64
	First, Last                                time.Time // event times
	Elapsed                                    time.Duration
	Errors                                     []error // the first MaxErrors malformed lines
}

const batchLines = 2048

type lineRef struct {
	off, n uint32
	line   int32
	file   int32
}

type eventRef struct {
	t      int64 // unix nanoseconds; 0 = no event (malformed line)
	lo, hi uint32
	client netip.Addr
}

type batch struct {
	seq   uint64
	arena []byte
	lines []lineRef
	evs   []eventRef
	m     engine.Matches
	errs  []error
	bad   int64
}

// Run replays paths in order and returns when all are done or ctx ends.
func Run(ctx context.Context, cfg Config, paths []string) (Stats, error) {
	if cfg.Engine == nil {
		return Stats{}, errors.New("replay: no engine")
	}
	if cfg.Format == nil && !cfg.JSON {
		f, err := nginxlog.Compile("combined")
		if err != nil {
			return Stats{}, fmt.Errorf("replay: %w", err)
		}
		cfg.Format = f
	}
	if cfg.Enricher == nil {
		en, err := characteristics.NewEnricher(characteristics.EnrichConfig{})
		if err != nil {
			return Stats{}, fmt.Errorf("replay: %w", err)
		}
		cfg.Enricher = en
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.MaxErrors <= 0 {
		cfg.MaxErrors = 10
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	free := make(chan *batch, 4*cfg.Workers)
	for range cap(free) {
		free <- &batch{arena: make([]byte, 0, batchLines*256)}
	}
	work := make(chan *batch, cfg.Workers)
	done := make(chan *batch, 4*cfg.Workers)

	var (
		readErr  error
		lines    atomic.Int64
		fileIdx  atomic.Int64
		readByte atomic.Int64
	)
	go func() { // reader
		defer close(work)
		var seq uint64
		for i, p := range paths {
			fileIdx.Store(int64(i))
			if err := readFile(ctx, p, int32(i), free, work, &seq, &lines, &readByte); err != nil {
				readErr = err
				return
			}
		}
	}()

	var wg sync.WaitGroup
	for range cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ev characteristics.Event
			for b := range work {
				prepare(&cfg, paths, b, &ev)
				done <- b
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()

	var st Stats
	st.Files = int64(len(paths))
	pending := map[uint64]*batch{}
	var next uint64
	lastProgress := time.Now()
	report := func(final bool) {
		if cfg.Progress == nil {
			return
		}
		fi := int(fileIdx.Load())
		pr := Progress{FileIndex: fi, Files: len(paths), Lines: lines.Load(), Malformed: st.Malformed,
			Elapsed: time.Since(start), Done: final, Read: readByte.Load()}
		if fi < len(paths) {
			pr.File = paths[fi]
		}
		cfg.Progress(pr)
	}
	for b := range done {
		pending[b.seq] = b
		for {
			b, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			apply(&cfg, b, &st)
			for _, err := range b.errs {
				if len(st.Errors) < cfg.MaxErrors {
					st.Errors = append(st.Errors, err)
					cfg.Logger.Warn("malformed log line skipped", "err", err)
				}
			}
			st.Malformed += b.bad
			free <- b
		}
		if time.Since(lastProgress) > 100*time.Millisecond {
			lastProgress = time.Now()
			report(false)
		}
	}
	st.Lines = lines.Load()
	st.Elapsed = time.Since(start)
	report(true)
	if readErr != nil {
		return st, readErr
	}
	return st, ctx.Err()
}

func readFile(ctx context.Context, path string, idx int32, free <-chan *batch, work chan<- *batch, seq *uint64, lines, read *atomic.Int64) error {
	r, err := nginxlog.Open(path)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	defer r.Close()
	var b *batch
	flush := func() {
		if b != nil && len(b.lines) > 0 {
			b.seq = *seq
			*seq++
			work <- b
			b = nil
		}
	}
	for {
		line, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			flush()
			return fmt.Errorf("replay: %s: %w", path, err)
		}
		if b == nil {
			select {
			case b = <-free:
			case <-ctx.Done():
				return ctx.Err()
			}
			b.arena, b.lines = b.arena[:0], b.lines[:0]
		}
		off := len(b.arena)
		b.arena = append(b.arena, line...)
		b.lines = append(b.lines, lineRef{off: uint32(off), n: uint32(len(line)), line: int32(r.Line()), file: idx})
		lines.Add(1)
		read.Add(int64(len(line)) + 1)
		if len(b.lines) == batchLines || len(b.arena) > cap(b.arena)-64*1024 {
			flush()
		}
	}
	flush()
	return nil
}

// prepare parses and evaluates one batch; it runs on a worker.
func prepare(cfg *Config, paths []string, b *batch, ev *characteristics.Event) {
	b.m.Reset()
	b.evs, b.errs, b.bad = b.evs[:0], b.errs[:0], 0
	for _, l := range b.lines {
		line := b.arena[l.off : l.off+l.n]
		ev.Reset()
		var err error
		if cfg.JSON {
			err = nginxlog.ParseJSON(line, ev)
		} else {
			err = cfg.Format.Parse(line, ev)
		}
		if err != nil || ev.Time.IsZero() {
			b.bad++
			if len(b.errs) < cfg.MaxErrors {
				if err == nil {
					err = errors.New("no time in line")
				}
				b.errs = append(b.errs, &nginxlog.LineError{File: paths[l.file], Line: int(l.line), Err: err})
			}
			b.evs = append(b.evs, eventRef{})
			continue
		}
		ev.Source = characteristics.SourceNginxLog
		cfg.Enricher.Enrich(ev)
		if cfg.Join != nil {
			cfg.Join.Enrich(ev)
		}
		lo := uint32(len(b.m.Items))
		cfg.Engine.Prepare(ev, &b.m)
		b.evs = append(b.evs, eventRef{t: ev.Time.UnixNano(), lo: lo, hi: uint32(len(b.m.Items)), client: ev.IP})
	}
}

// apply runs on the sequencer, in input order.
func apply(cfg *Config, b *batch, st *Stats) {
	for _, e := range b.evs {
		if e.t == 0 {
			continue
		}
		st.Events++
		t := time.Unix(0, e.t)
		if st.First.IsZero() || t.Before(st.First) {
			st.First = t
		}
		if t.After(st.Last) {
			st.Last = t
		}
		if e.hi > e.lo && cfg.Engine.Apply(t, b.m.Items[e.lo:e.hi], b.m.Keys) {
			st.Mitigated++
			if cfg.OnMitigated != nil {
				cfg.OnMitigated(e.client, t)
			}
		}
	}
}

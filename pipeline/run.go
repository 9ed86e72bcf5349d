package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/characteristics/bots"
	"github.com/guardd/guardd/characteristics/session"
	"github.com/guardd/guardd/counting"
	"github.com/guardd/guardd/ingest/nginxlog"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/throttle"
	"github.com/guardd/guardd/mitigation/verdict"
	"github.com/guardd/guardd/rules"
	"github.com/guardd/guardd/rules/engine"
)

// Store is what the pipeline needs of the mitigation table.
type Store interface {
	LookupRule(key uint64, rule string, now time.Time) (mitigation.Mitigation, bool)
	Add(m mitigation.Mitigation, now time.Time) (mitigation.Mitigation, bool, error)
	// Allowlisted reports whether the allowlist covers a request, whatever
	// a mitigation's scope (consulted only for a Report).
	Allowlisted(e *characteristics.Event) bool
}

// Joiner attaches fingerprints sniffed from the same connection to an event.
type Joiner interface {
	Enrich(e *characteristics.Event) bool
}

// DefaultFutureTolerance is how far ahead of the wall clock an event's time
// may be before it is clamped: clocks of a few seconds apart are normal,
// a line dated tomorrow is not.
const DefaultFutureTolerance = time.Minute

// Config configures Run.
type Config struct {
	Pipelines *Holder // required; the current pipeline is taken per batch
	Store     Store   // required: where trips go
	Join      Joiner  // optional
	// Workers parse and evaluate in parallel; 0 means GOMAXPROCS.
	Workers int
	// Replay runs the store on event time (the mitigations a log would have
	// made, whenever it was written) instead of the wall clock.
	Replay bool
	// Now is the wall clock, read once per batch; nil means time.Now.
	Now func() time.Time
	// FutureTolerance: events dated further ahead of Now are clamped to Now
	// and counted; 0 means DefaultFutureTolerance.
	FutureTolerance time.Duration
	// Counted, when set, holds the IDs of requests counted at decision time
	// (decision.count): their log lines do not count those rules again.
	Counted *counting.Seen
	// Report, when set, records every mitigation made and what the
	// mitigations in force did to each request (replay).
	Report *Report
	// Metrics, when set, are updated per batch.
	Metrics *Metrics
	Logger  *slog.Logger
	// MaxErrors is how many malformed lines are logged one by one (then one
	// every 10 seconds) and kept in Stats; 0 means 10.
	MaxErrors int
	// Applied, when set, is called on the sequencer after each batch a
	// Source marked, with the mark, once its lines are counted.
	Applied func(mark any, st *Stats)
	// Sweep is how often (wall clock) idle counters are swept in a live
	// run; 0 means 10s. A replay never sweeps.
	Sweep time.Duration
	// Observe, when set, is handed every event parsed, on the workers and
	// so concurrently, before it is counted: the request-time limiter's
	// view of the log (in-flight release, shedding signals).
	Observe func(*characteristics.Event)
	// Sessions configures the table of session.* characteristics, which
	// the run keeps across reloads; the zero value is its defaults.
	Sessions session.Config
}

// Stats summarises a run so far.
type Stats struct {
	Lines, Malformed, Events, Mitigated int64
	Future                              int64     // events dated ahead of the clock, clamped
	First, Last                         time.Time // event times
	Errors                              []error   // the first MaxErrors malformed lines
}

const batchLines = 2048

// lineRef is a line of a batch's arena, or a block of lines (Writer.Block)
// that the worker splits.
type lineRef struct {
	off, n uint32
	line   int64 // the line's number in file; a block's first line's
	file   string
	host   string // syslog.host of the line (LineFrom)
	block  bool
	max    uint32 // a block's MaxLine
}

type eventRef struct {
	t      int64 // unix nanoseconds; 0 = no event (malformed line)
	lo, hi uint32
	client netip.Addr
	reqID  uint64 // hash of $request_id when Counted is set; 0 none
	// allowed: the store's allowlist covers the request (only worked out
	// for a report): the decision API would give it no action.
	allowed bool
	// page: the request is a page view (verdict.PageView; for a report).
	page bool
	// clo, chi: the request's throttle counts in batch.counts (a report
	// that simulates throttle rules).
	clo, chi uint32
	// mit: the event's engine.Mitigable in batch.m (a report).
	mit uint32
}

type batch struct {
	seq    uint64
	now    time.Time // wall clock when the batch was read
	arena  []byte
	lines  []lineRef
	nlines int // lines in lines, blocks' included
	// events are the batch's parsed lines, and sreq what each says of its
	// client's session (Key 0: a malformed line): parsed by a worker, their
	// sessions filled in input order by the session stage, then evaluated
	// by a worker.
	events []characteristics.Event
	sreq   []session.Request
	sess   []characteristics.Session // by the session stage, per event
	// evaluated: the worker that parsed the batch evaluated each line as
	// it parsed it, with no session (its pipeline keeps none): the
	// session stage and the evaluating worker pass it on untouched.
	evaluated bool
	limits    *throttle.Rules // the simulated throttle rules (a report)
	evs       []eventRef
	m         engine.Matches
	mt        rules.Matches    // of the simulated throttle rules
	counts    []throttle.Count // of the simulated throttle rules
	// perRule counts the events each rule counted, by rule index: worked
	// out by the worker, corrected by the sequencer for requests counted
	// at decision time.
	perRule []float64
	tbuf    []byte
	errs    []error
	bad     int64
	future  int64
	p       *Pipeline // acquired by the worker, released by the sequencer
	mark    any
	marked  bool
}

// Source feeds Run with lines.
type Source interface {
	// Read calls w.Line for every line, in order, until the input ends (it
	// returns nil) or ctx ends; Mark flushes what was written so far.
	Read(ctx context.Context, w *Writer) error
}

// Writer takes lines from a Source into batches.
type Writer struct {
	ctx   context.Context
	free  <-chan *batch
	work  chan<- *batch
	b     *batch
	seq   *atomic.Uint64 // shared by the Writers of a Merge
	now   func() time.Time
	lines int64
}

// Line copies data (file and line number name it in errors) into the
// current batch.
func (w *Writer) Line(data []byte, file string, line int64) error {
	return w.LineFrom(data, file, line, "")
}

// LineFrom is Line for a line sent by host (syslog.host): a syslog
// source's.
func (w *Writer) LineFrom(data []byte, file string, line int64, host string) error {
	if w.b == nil {
		if err := w.take(); err != nil {
			return err
		}
	}
	b := w.b
	off := len(b.arena)
	b.arena = append(b.arena, data...)
	b.lines = append(b.lines, lineRef{off: uint32(off), n: uint32(len(data)), line: line, file: file, host: host})
	b.nlines++
	w.lines++
	if b.nlines >= batchLines || len(b.arena) > cap(b.arena)-64*1024 {
		w.flush()
	}
	return nil
}

// Buffer returns the free space at the end of the current batch, at least
// min bytes (a batch grows for a larger min), for a Source to read lines
// straight into and hand over with Block: the copy Line makes is saved, and
// the one goroutine that reads does no work per line.
func (w *Writer) Buffer(min int) ([]byte, error) {
	if w.b != nil && cap(w.b.arena)-len(w.b.arena) < min {
		w.flush()
	}
	if w.b == nil {
		if err := w.take(); err != nil {
			return nil, err
		}
	}
	if cap(w.b.arena)-len(w.b.arena) < min {
		w.b.arena = slices.Grow(w.b.arena, min)
	}
	a := w.b.arena
	return a[len(a):cap(a)], nil
}

// Block adds the first n bytes of the space Buffer returned: lines whole
// lines of file, each ended by '\n', the first of them numbered first, which
// the workers split as nginxlog.SplitLine does with maxLine (what
// nginxlog.Reader.ReadBlock reads).
func (w *Writer) Block(n, lines int, file string, first int64, maxLine int) error {
	b := w.b
	if b == nil || n > cap(b.arena)-len(b.arena) {
		return errors.New("pipeline: Block without the space of a Buffer")
	}
	if n == 0 {
		return nil
	}
	off := len(b.arena)
	b.arena = b.arena[:off+n]
	b.lines = append(b.lines, lineRef{off: uint32(off), n: uint32(n), line: first, file: file, block: true, max: uint32(maxLine)})
	b.nlines += lines
	w.lines += int64(lines)
	if b.nlines >= batchLines || len(b.arena) > cap(b.arena)-64*1024 {
		w.flush()
	}
	return nil
}

// Mark flushes the lines written so far; Config.Applied gets m once they are
// counted. A Mark with no lines written is passed on all the same.
func (w *Writer) Mark(m any) error {
	if w.b == nil {
		if err := w.take(); err != nil {
			return err
		}
	}
	w.b.mark, w.b.marked = m, true
	w.flush()
	return nil
}

// Lines returns how many lines were written.
func (w *Writer) Lines() int64 { return w.lines }

func (w *Writer) take() error {
	select {
	case w.b = <-w.free:
	case <-w.ctx.Done():
		return w.ctx.Err()
	}
	b := w.b
	b.arena, b.lines, b.nlines, b.mark, b.marked = b.arena[:0], b.lines[:0], 0, nil, false
	b.now = w.now()
	return nil
}

func (w *Writer) flush() {
	if w.b == nil {
		return
	}
	if len(w.b.lines) == 0 && !w.b.marked {
		return
	}
	// Writers of a Merge take numbers from one sequence: the sequencer
	// applies batches in its order, each Source's in the order written.
	w.b.seq = w.seq.Add(1) - 1
	w.work <- w.b
	w.b = nil
}

// Run reads src to its end (or until ctx ends) through the per-event path.
func Run(ctx context.Context, cfg Config, src Source) (Stats, error) {
	if cfg.Pipelines == nil || cfg.Store == nil {
		return Stats{}, errors.New("pipeline: run needs pipelines and a store")
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
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.FutureTolerance <= 0 {
		cfg.FutureTolerance = DefaultFutureTolerance
	}
	if cfg.Sweep <= 0 {
		cfg.Sweep = 10 * time.Second
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// A batch whose events wait for the session stage keeps them all (two
	// megabytes of events per batch): with sessions, half as many batches
	// out at once keep more of them in the cache (measured: about 5% less CPU
	// on a log with cookies), at the start's pipeline's word.
	inFlight := 4 * cfg.Workers
	if p := cfg.Pipelines.Load(); p != nil && p.sessions {
		inFlight = 2 * cfg.Workers
	}
	free := make(chan *batch, inFlight)
	for range cap(free) {
		free <- &batch{arena: make([]byte, 0, batchLines*256), events: make([]characteristics.Event, 0, batchLines)}
	}
	// A batch goes from the reader to a worker that parses it (work), to
	// the session stage that fills its events' sessions in input order
	// (parsed), to a worker that evaluates the rules (staged), to the
	// sequencer that counts in input order (done). At most cap(free)
	// batches are out at once, so no send below blocks for long.
	work := make(chan *batch, cfg.Workers)
	parsed := make(chan *batch, cap(free))
	staged := make(chan *batch, cap(free))
	done := make(chan *batch, cap(free))

	w := &Writer{ctx: ctx, free: free, work: work, now: cfg.Now, seq: new(atomic.Uint64)}
	var readErr error
	go func() {
		defer close(work)
		readErr = src.Read(ctx, w)
		if readErr == nil {
			w.flush()
		}
	}()

	var parsers, evaluators sync.WaitGroup
	for range cfg.Workers {
		parsers.Add(1)
		go func() {
			defer parsers.Done()
			w := new(worker)
			for b := range work {
				w.parse(&cfg, b)
				parsed <- b
			}
		}()
		evaluators.Add(1)
		go func() {
			defer evaluators.Done()
			for b := range staged {
				evaluate(&cfg, b)
				done <- b
			}
		}()
	}
	go func() { parsers.Wait(); close(parsed) }()
	go func() {
		sessions(session.New(cfg.Sessions), parsed, staged)
		close(staged)
	}()
	go func() { evaluators.Wait(); close(done) }()

	s := sequencer{cfg: &cfg, pending: map[uint64]*batch{}, lastSweep: cfg.Now(),
		tripper: newTripper(cfg.Store, cfg.Report, cfg.Metrics, cfg.Logger)}
	for b := range done {
		s.pending[b.seq] = b
		for {
			b, ok := s.pending[s.next]
			if !ok {
				break
			}
			delete(s.pending, s.next)
			s.next++
			s.apply(b)
			free <- b
		}
	}
	s.st.Lines = w.lines
	if readErr != nil && !errors.Is(readErr, context.Canceled) {
		return s.st, readErr
	}
	return s.st, ctx.Err()
}

// minTime and maxTime bound the event times UnixNano can hold.
var (
	minTime = time.Unix(0, 0)
	errTime = errors.New("no time in line")
	errOld  = errors.New("time before 1970")
)

// worker is what a parsing worker keeps from batch to batch: the events it
// reuses when it evaluates as it parses, and what lines tend to repeat
// (their time, their addresses, their user agents).
type worker struct {
	// evs are the events parsed and not yet evaluated, of a batch
	// evaluated as it is parsed: n of them.
	evs   [evalGroup]characteristics.Event
	n     int
	cache nginxlog.Cache
	memo  bots.Memo
	// Of the batch being parsed:
	p     *Pipeline
	limit time.Time // events dated after it are clamped
}

// parse parses, enriches and joins the lines of one batch into its events;
// it runs on a worker and reads no shared state but the pipeline's.
func (w *worker) parse(cfg *Config, b *batch) {
	p := cfg.Pipelines.Acquire()
	b.p = p
	b.errs, b.bad, b.future = b.errs[:0], 0, 0
	b.sreq = b.sreq[:0]
	// Without sessions the lines are evaluated as they are parsed, a
	// group of evalGroup at a time (flush), their events still in the
	// data cache: no session stage to wait for.
	if b.evaluated = !p.sessions; b.evaluated {
		begin(cfg, b)
	}
	w.p, w.limit = p, b.now.Add(cfg.FutureTolerance)
	for _, l := range b.lines {
		data := b.arena[l.off : l.off+l.n]
		if !l.block {
			w.line(cfg, b, data, l.file, l.line, l.host)
			continue
		}
		for n := l.line; len(data) > 0; n++ {
			var line []byte
			line, data, _ = nginxlog.SplitLine(data, int(l.max))
			w.line(cfg, b, line, l.file, n, "")
		}
	}
	w.flush(cfg, b)
	w.p = nil
}

// evalGroup is how many lines a worker parses before it evaluates them:
// parsing and evaluating a line are each more code than the instruction
// cache holds, so alternating them line by line would reload both every
// line; a group of lines goes through each at a time, its events still in
// the data cache.
const evalGroup = 16

// flush evaluates the events parsed and not yet evaluated, in order.
func (w *worker) flush(cfg *Config, b *batch) {
	for i := range w.n {
		evaluateEvent(cfg, b, w.p, b.limits, &w.evs[i])
	}
	w.n = 0
}

// line parses, enriches and joins one line of b into the next of its
// events, or, for a batch evaluated as it is parsed, into the next of the
// worker's events, evaluated with the rest of its group (flush).
func (w *worker) line(cfg *Config, b *batch, line []byte, file string, num int64, host string) {
	p := w.p
	var ev *characteristics.Event
	if b.evaluated {
		ev = &w.evs[w.n]
	} else {
		k := len(b.sreq)
		if k == len(b.events) {
			b.events = append(b.events, characteristics.Event{})
		}
		ev = &b.events[k]
	}
	var err error // both parsers reset ev first
	if p.json {
		err = nginxlog.ParseJSON(line, ev)
	} else {
		err = p.format.ParseCache(line, ev, &w.cache)
	}
	if err == nil {
		switch {
		case ev.Time.IsZero():
			err = errTime
		case ev.Time.Before(minTime):
			err = errOld
		case ev.Time.After(w.limit):
			// A clock far ahead, or a forged date: counted at the
			// wall clock, so it can neither make a ban that lasts
			// until its date nor sweep the counters into the future.
			ev.Time = b.now
			b.future++
		}
	}
	if err != nil {
		b.bad++
		if len(b.errs) < cfg.MaxErrors {
			b.errs = append(b.errs, &nginxlog.LineError{File: file, Line: int(num), Err: err})
		}
		if b.evaluated {
			w.flush(cfg, b) // the lines before it, in order
			b.evs = append(b.evs, eventRef{})
		} else {
			b.sreq = append(b.sreq, session.Request{})
		}
		return
	}
	ev.Source = characteristics.SourceNginxLog
	ev.SyslogHost = host
	p.enricher.EnrichMemo(ev, &w.memo)
	if cfg.Join != nil {
		cfg.Join.Enrich(ev)
	}
	if cfg.Observe != nil {
		cfg.Observe(ev)
	}
	if b.evaluated {
		if w.n++; w.n == evalGroup {
			w.flush(cfg, b)
		}
		return
	}
	b.sreq = append(b.sreq, session.Of(ev, p.cookies))
}

// prepare parses and evaluates one batch on the calling goroutine,
// without the session stage (its events' sessions are unknown): what a
// test of one batch needs.
func (w *worker) prepare(cfg *Config, b *batch) {
	w.parse(cfg, b)
	b.sess = b.sess[:0]
	evaluate(cfg, b)
}

// sessions fills the sessions of the events of the batches from in, in
// input order, on one goroutine (tbl is its own), and passes each batch on
// to out.
func sessions(tbl *session.Table, in <-chan *batch, out chan<- *batch) {
	pending := map[uint64]*batch{}
	var next uint64
	for b := range in {
		pending[b.seq] = b
		for {
			b, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			// Into a slice of their own: the stage's writes stay
			// sequential and small, away from the events.
			b.sess = slices.Grow(b.sess[:0], len(b.sreq))[:len(b.sreq)]
			for k, r := range b.sreq {
				if r.Key != 0 {
					b.sess[k] = tbl.Observe(r)
				}
			}
			out <- b
		}
	}
}

// evaluate evaluates the rules on the events of a parsed batch whose
// sessions are filled; it runs on a worker.
func evaluate(cfg *Config, b *batch) {
	if b.evaluated {
		return
	}
	begin(cfg, b)
	for k, r := range b.sreq {
		if r.Key == 0 {
			b.evs = append(b.evs, eventRef{})
			continue
		}
		ev := &b.events[k]
		if k < len(b.sess) {
			ev.Session = b.sess[k]
		}
		evaluateEvent(cfg, b, b.p, b.limits, ev)
	}
}

// begin readies b for the evaluation of its events.
func begin(cfg *Config, b *batch) {
	p := b.p
	b.m.Reset()
	// What mitigation expressions matched is read only by a replay's
	// verdicts: the daemon's decision API evaluates them itself.
	b.m.CountOnly = cfg.Report == nil
	b.evs = b.evs[:0]
	b.counts = b.counts[:0]
	b.perRule = append(b.perRule[:0], make([]float64, len(p.engine.Rules()))...)
	b.limits = nil
	if cfg.Report != nil {
		b.limits = cfg.Report.limits
	}
}

// evaluateEvent evaluates the rules on one event of b.
func evaluateEvent(cfg *Config, b *batch, p *Pipeline, limits *throttle.Rules, ev *characteristics.Event) {
	lo, mit := uint32(len(b.m.Items)), uint32(b.m.Mitigables())
	p.engine.Prepare(ev, &b.m)
	for i := range b.m.Items[lo:] {
		b.perRule[b.m.Items[int(lo)+i].Rule]++ // each counts (the sequencer corrects for decision.count)
	}
	r := eventRef{t: ev.Time.UnixNano(), lo: lo, hi: uint32(len(b.m.Items)), client: ev.IP, mit: mit}
	if cfg.Report != nil {
		// What the sequencer's verdict reads of the request, worked out
		// here, in parallel: the allowlist, a page view, throttle keys.
		r.allowed = cfg.Store.Allowlisted(ev)
		r.page = cfg.Report.verdicts() && verdict.PageView(ev)
		if limits != nil && !r.allowed {
			// The decision API's count of the request: an allowlisted
			// one is not counted.
			limits.Set().Eval(ev, &b.mt)
			r.clo = uint32(len(b.counts))
			b.counts, b.tbuf = limits.Counts(ev, &b.mt, b.tbuf, b.counts)
			r.chi = uint32(len(b.counts))
		}
	}
	if cfg.Counted != nil {
		if id, ok := ev.Var("request_id"); ok && id != "" && id != "-" {
			r.reqID = counting.HashString(id) | 1 // never 0
		}
	}
	b.evs = append(b.evs, r)
}

// sequencer applies prepared batches in input order.
type sequencer struct {
	cfg       *Config
	pending   map[uint64]*batch
	next      uint64
	st        Stats
	trips     []engine.Trip
	tripper   *tripper
	req       replayRequest
	logged    int
	lastWarn  time.Time // last malformed line logged
	lastSweep time.Time
	newest    int64
}

func (s *sequencer) apply(b *batch) {
	cfg, p := s.cfg, b.p
	defer func() { b.p = nil; p.Release() }()
	rs := p.engine.Rules()
	for _, e := range b.evs {
		if e.t == 0 {
			continue
		}
		s.st.Events++
		t := time.Unix(0, e.t)
		if s.st.First.IsZero() || t.Before(s.st.First) {
			s.st.First = t
		}
		if t.After(s.st.Last) {
			s.st.Last = t
		}
		s.newest = max(s.newest, e.t)
		items := b.m.Items[e.lo:e.hi]
		if e.reqID != 0 && cfg.Counted.Take(e.reqID, b.now.UnixNano()) {
			for i := range items {
				if it := &items[i]; it.Count && rs[it.Rule].RequestTime {
					it.Count = false
					b.perRule[it.Rule]--
				}
			}
		}
		s.trips = p.engine.Apply(t, items, b.m.Keys, s.trips[:0])
		storeNow := b.now
		if cfg.Replay {
			storeNow = t
		}
		for i := range s.trips {
			s.tripper.trip(p, &s.trips[i], storeNow)
		}
		if rep := cfg.Report; rep != nil {
			// The verdict on the request, as the decision API would give it
			// with the mitigations in force after the request's own trips;
			// the report observes it.
			q := &s.req
			if rep.verdicts() {
				*q = replayRequest{r: rep, allowed: e.allowed, page: e.page, client: e.client, t: t, counts: b.counts[e.clo:e.chi],
					mk: p.engine.Mitigable(&b.m, int(e.mit)), rules: rs}
				rep.observe(e.client, t, verdict.Decide(q, t))
			} else {
				// Only tallied: most requests meet no mitigation and
				// have no throttle count, and end on the report's key
				// bits, before a request is made.
				if e.allowed {
					continue
				}
				mk := p.engine.Mitigable(&b.m, int(e.mit))
				keyed := len(rep.entries) > 0 && rep.anyKey(mk.Keys())
				if !keyed && e.chi == e.clo && (len(rep.scores) == 0 || !e.client.IsValid()) {
					continue
				}
				*q = replayRequest{r: rep, client: e.client, t: t, counts: b.counts[e.clo:e.chi], mk: mk, rules: rs, started: true}
				if !keyed {
					q.from = -1
				}
				q.tally()
			}
			if q.applied {
				s.st.Mitigated++
			}
		}
	}
	s.st.Malformed += b.bad
	s.st.Future += b.future
	for _, err := range b.errs {
		if len(s.st.Errors) < cfg.MaxErrors {
			s.st.Errors = append(s.st.Errors, err)
		}
		if s.logged < cfg.MaxErrors || b.now.Sub(s.lastWarn) > 10*time.Second {
			s.logged++
			s.lastWarn = b.now
			cfg.Logger.Warn("malformed log line skipped", "err", err)
		}
	}
	cfg.Metrics.batch(b, rs, b.perRule)
	if !cfg.Replay && b.now.Sub(s.lastSweep) > cfg.Sweep && s.newest > 0 {
		s.lastSweep = b.now
		p.engine.Expire(time.Unix(0, s.newest))
	}
	if b.marked && cfg.Applied != nil {
		cfg.Applied(b.mark, &s.st)
	}
}

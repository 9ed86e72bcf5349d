package redis

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/guardd/guardd/counting"
	"github.com/prometheus/client_golang/prometheus"
)

// Store is what the fleet tier needs from Redis; *Conn implements it, and
// unit tests use an in-process fake.
type Store interface {
	// Apply runs each op's script and fills states and errs (both as long
	// as ops); it returns the first error.
	Apply(ctx context.Context, ops []Op, states []State, errs []error) error
	// Heartbeat registers node and returns the number of live nodes.
	Heartbeat(ctx context.Context, node string, ttl time.Duration) (int, error)
}

// Defaults of Config.
const (
	DefaultFlushInterval = 50 * time.Millisecond
	DefaultDeadline      = 20 * time.Millisecond
	DefaultThreshold     = 3
	DefaultCooldown      = time.Second
	DefaultNodeTTL       = 3 * time.Second
	DefaultMaxKeys       = 1 << 20
	DefaultColdShare     = 0.005
	// BatchSize is the most ops sent in one pipeline under one deadline.
	BatchSize = 512
)

// Config configures a Fleet. The zero value of each field but Node means
// its default.
type Config struct {
	// Node names this node, uniquely in the fleet.
	Node string
	// FlushInterval is how often local deltas go to Redis; a key whose
	// delta uses up its lease is flushed sooner.
	FlushInterval time.Duration
	// Deadline bounds each pipeline of at most BatchSize scripts; a missed
	// deadline counts as a failure for the breaker.
	Deadline time.Duration
	// Threshold consecutive failures open the breaker; it probes again
	// after Cooldown.
	Threshold int
	Cooldown  time.Duration
	// NodeTTL is how long a node counts as live after its last heartbeat
	// (sent every NodeTTL/3).
	NodeTTL time.Duration
	// MaxKeys caps the keys each rule tracks.
	MaxKeys int
	// ColdShare is the fraction of a key's capacity the fleet may admit
	// beyond the leases Redis granted (each node its part, at least one
	// event), while a node waits for a grant; 0 means DefaultColdShare.
	// It bounds the over-admission of the two-tier scheme.
	ColdShare float64
	// Now is the clock used for flush bookkeeping; nil means time.Now.
	// Decisions take the caller's time.
	Now func() time.Time
}

// Fleet is one node's fleet-wide counting tier: the Counters of its
// rules, and the loop that flushes their deltas to Redis and brings the
// global state back.
type Fleet struct {
	cfg   Config
	store Store
	log   *slog.Logger
	met   *metrics

	eps     endpoints    // one circuit breaker per Redis endpoint (endpoint.go)
	healthy atomic.Bool  // every endpoint's breaker is closed
	off     atomic.Int64 // Redis time minus local time, ns
	nodes   atomic.Int64 // live nodes, >= 1
	kick    chan struct{}
	dist    distinctTier // the distinct rules' counters (distinct.go)

	mu sync.Mutex
	// counters are the rules' counters, held weakly: a counter its rule
	// set no longer references (the rule was removed or changed on a
	// reload) is collected and leaves the flush loop.
	counters []weak.Pointer[Counter]
	seq      uint64
	lastBeat time.Time
	lastFull time.Time     // the last flush that looked at every key
	lastOK   atomic.Int64  // unix ns of the last successful round trip
	rounds   atomic.Uint64 // flushes that went ahead (the breaker allowed them)
}

// New validates cfg. It connects to nothing: Run does.
func New(cfg Config, store Store, reg prometheus.Registerer, log *slog.Logger) (*Fleet, error) {
	if cfg.Node == "" {
		return nil, fmt.Errorf("counting/redis: fleet needs a node name")
	}
	if store == nil {
		return nil, fmt.Errorf("counting/redis: fleet needs a store")
	}
	def := func(d *time.Duration, v time.Duration, name string) error {
		if *d < 0 {
			return fmt.Errorf("counting/redis: %s %v: must be >= 0", name, *d)
		}
		if *d == 0 {
			*d = v
		}
		return nil
	}
	for _, e := range []error{
		def(&cfg.FlushInterval, DefaultFlushInterval, "flush interval"),
		def(&cfg.Deadline, DefaultDeadline, "deadline"),
		def(&cfg.Cooldown, DefaultCooldown, "cooldown"),
		def(&cfg.NodeTTL, DefaultNodeTTL, "node ttl"),
	} {
		if e != nil {
			return nil, e
		}
	}
	if cfg.Threshold <= 0 {
		cfg.Threshold = DefaultThreshold
	}
	if cfg.ColdShare < 0 || cfg.ColdShare > 1 {
		return nil, fmt.Errorf("counting/redis: cold share %v: must be in [0, 1]", cfg.ColdShare)
	}
	if cfg.ColdShare == 0 {
		cfg.ColdShare = DefaultColdShare
	}
	if cfg.MaxKeys <= 0 {
		cfg.MaxKeys = DefaultMaxKeys
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	met, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	f := &Fleet{cfg: cfg, store: store, log: log, met: met, kick: make(chan struct{}, 1)}
	if f.dist.met, err = newDistinctMetrics(reg); err != nil {
		return nil, err
	}
	f.nodes.Store(1)
	f.healthy.Store(true)
	f.eps.init(f, firstEndpoint(store))
	met.setWorst(BreakerClosed)
	met.nodes.Set(1)
	return f, nil
}

// Counter returns the fleet-wide counter of one rule: the one made before
// for the same Rule if it is still in use (a reload that keeps a rule keeps
// its counts and leases), else a new one. A counter nobody references any
// more leaves the flush loop once the garbage collector has freed it, so
// the counters of rules removed by reloads do not pile up.
func (f *Fleet) Counter(r Rule) (*Counter, error) {
	p, err := newParams(r)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, w := range f.counters {
		if c := w.Value(); c != nil && c.rule == r {
			return c, nil
		}
	}
	c := &Counter{f: f, rule: r, p: p, prefix: "guardd:{" + r.Name + ":"}
	c.keys.Init(counterShards, f.cfg.MaxKeys/counterShards)
	for m := range numDecisions {
		c.decisions[m] = f.met.decisions.WithLabelValues(m.String())
	}
	f.counters = append(f.counters, weak.Make(c))
	return c, nil
}

// live returns the counters still in use and forgets the others.
// f.mu must be held.
func (f *Fleet) liveLocked() []*Counter { return liveOf(&f.counters) }

// liveOf returns the values the pointers of *ws still point to and drops
// the pointers whose value was collected.
func liveOf[T any](ws *[]weak.Pointer[T]) []*T {
	out := make([]*T, 0, len(*ws))
	keep := (*ws)[:0]
	for _, w := range *ws {
		if v := w.Value(); v != nil {
			out = append(out, v)
			keep = append(keep, w)
		}
	}
	clear((*ws)[len(keep):])
	*ws = keep
	return out
}

// Counters returns how many counters are in the flush loop.
func (f *Fleet) Counters() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.liveLocked())
}

// Healthy reports whether counts are fleet-wide now for every key (every
// endpoint's breaker is closed); when false, the keys on an endpoint whose
// breaker is not closed answer by their rule's OnError.
func (f *Fleet) Healthy() bool { return f.healthy.Load() }

// Status is what guardd status shows of the fleet.
type Status struct {
	Node string
	// Breaker is the worst state of the endpoints' breakers.
	Breaker string
	// Endpoints are the Redis endpoints (a Cluster's masters) and the
	// state of each one's breaker.
	Endpoints []EndpointStatus
	LiveNodes int
	// LastContact is when Redis last answered; zero if never.
	LastContact time.Time
	// ClockOffset is Redis time minus this node's clock.
	ClockOffset time.Duration
}

// Status returns the fleet's state now.
func (f *Fleet) Status() Status {
	s := Status{Node: f.cfg.Node, LiveNodes: int(f.nodes.Load()), ClockOffset: time.Duration(f.off.Load())}
	var worst BreakerState
	s.Endpoints, worst = f.eps.status()
	s.Breaker = worst.String()
	if ns := f.lastOK.Load(); ns != 0 {
		s.LastContact = time.Unix(0, ns)
	}
	return s
}

// slowGap: a request more than slowGap flush intervals after its key's
// last one is a slow client's, whose lease is not topped up at half spent
// (Counter.add).
const slowGap = 2

// kickGap divides FlushInterval into the shortest time between a flush
// and one kicked by a used-up lease on a node alone in the fleet: kicks
// that come meanwhile share one flush (one round trip, one look at the
// keys in use) instead of one each. With other nodes a kick flushes at
// once: the sooner a node's events beyond its lease reach Redis, the
// sooner the others see them, and the sooner a grant ends its lease_wait.
const kickGap = 10

// Run flushes every FlushInterval, and sooner when a lease is used up (on
// a lone node at most one kicked flush per FlushInterval/kickGap), until
// ctx ends; it then flushes once more, briefly, and returns nil. The
// distinct counters' sketches are flushed every FlushInterval beside it
// (FlushDistinct).
func (f *Fleet) Run(ctx context.Context) error {
	defer f.runDistinct(ctx)()
	t := time.NewTicker(f.cfg.FlushInterval)
	defer t.Stop()
	gap := f.cfg.FlushInterval / kickGap
	wait := time.NewTimer(gap)
	defer wait.Stop()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			f.Flush(context.Background())
			return nil
		case <-t.C:
		case <-f.kick:
			if d := gap - time.Since(last); d > 0 && f.nodes.Load() == 1 {
				wait.Reset(d)
				select {
				case <-ctx.Done():
					f.Flush(context.Background())
					return nil
				case <-t.C:
				case <-wait.C:
				}
			}
		}
		last = time.Now()
		f.Flush(ctx)
	}
}

// Flush sends every pending delta (and reads back the state of keys used
// since the last flush) now. Run calls it; tests and benchmarks may too.
// Each endpoint's ops go under its own breaker and deadline, concurrently:
// a dead Cluster master neither fails nor delays the others' flushes.
func (f *Fleet) Flush(ctx context.Context) {
	now := f.cfg.Now()
	if f.eps.due(now) {
		f.eps.refresh(now)
	}
	top := f.eps.top.Load()
	rounds := make([]round, len(top.eps))
	any := false
	for i, ep := range top.eps {
		r := &rounds[i]
		r.ep = ep
		r.ok, r.probe = ep.br.Allow(now)
		if !r.ok {
			f.met.flushes.WithLabelValues("skipped").Inc()
		}
		any = any || r.ok
	}
	if !any {
		return
	}
	if hb := &rounds[top.of(heartbeatSlot)]; hb.ok && (hb.probe || now.Sub(f.lastBeat) >= f.cfg.NodeTTL/3) {
		// The heartbeat is its endpoint's probe when half-open.
		hb.ok, hb.probe = f.heartbeat(ctx, now, hb.ep), false
		if len(rounds) == 1 && !hb.ok {
			return
		}
	}
	f.mu.Lock()
	counters := f.liveLocked()
	f.seq++
	member := f.cfg.Node + ":" + strconv.FormatUint(f.seq, 10)
	full := now.Sub(f.lastFull) >= fullEvery*f.cfg.FlushInterval
	if full {
		f.lastFull = now
	}
	f.mu.Unlock()

	defer f.rounds.Add(1)
	b := batch{member: member}
	for _, c := range counters {
		c.collect(&b, now.UnixNano()+f.off.Load(), full)
	}
	if len(rounds) == 1 {
		if rounds[0].ok {
			rounds[0].ops, rounds[0].refs = b.ops, b.refs
			f.sendRound(ctx, &rounds[0])
		} else {
			requeue(b.refs)
		}
		return
	}
	for i := range b.ops {
		r := &rounds[top.of(KeySlot(b.ops[i].Key))]
		r.ops = append(r.ops, b.ops[i])
		r.refs = append(r.refs, b.refs[i])
	}
	var wg sync.WaitGroup
	for i := range rounds {
		r := &rounds[i]
		switch {
		case !r.ok:
			// Its breaker is open: the deltas wait for recovery.
			requeue(r.refs)
		case len(r.ops) > 0:
			wg.Add(1)
			go func() { defer wg.Done(); f.sendRound(ctx, r) }()
		case r.probe:
			wg.Add(1)
			go func() { defer wg.Done(); f.ping(ctx, r.ep) }()
		}
	}
	wg.Wait()
}

// heartbeatSlot is the slot of the live-node set, "guardd:{fleet}:nodes".
var heartbeatSlot = KeySlot("guardd:{fleet}:nodes")

// round is one flush's work for one endpoint.
type round struct {
	ep        *endpoint
	ok, probe bool
	ops       []Op
	refs      []ref
}

// sendRound sends one endpoint's ops in pipelines of at most BatchSize;
// after a failure the rest wait for recovery.
func (f *Fleet) sendRound(ctx context.Context, r *round) {
	for start := 0; start < len(r.ops); start += BatchSize {
		end := min(start+BatchSize, len(r.ops))
		if !f.send(ctx, r.ep, r.ops[start:end], r.refs[start:end]) {
			requeue(r.refs[end:])
			return
		}
	}
}

// requeue puts refs' deltas back to pending, unsent.
func requeue(refs []ref) {
	for i := range refs {
		refs[i].c.settle(refs[i], State{}, false)
	}
}

// ping is the half-open probe of an endpoint with nothing to flush.
func (f *Fleet) ping(ctx context.Context, ep *endpoint) {
	r, ok := f.store.(Router)
	if !ok {
		ep.br.Success() // a Store without endpoints is probed by its heartbeat
		return
	}
	err, _ := f.bounded(ctx, func(ctx context.Context) error { return r.Ping(ctx, ep.name) })
	if err != nil {
		f.failed(ep, err, f.cfg.Now())
		return
	}
	ep.br.Success()
	f.lastOK.Store(f.cfg.Now().UnixNano())
}

// firstEndpoint names the endpoint the fleet starts with, before a
// topology has been read: the one a Conn outside Cluster mode keeps.
func firstEndpoint(s Store) string {
	if n, ok := s.(interface{ endpointName() string }); ok {
		return n.endpointName()
	}
	return "redis"
}

func (f *Fleet) heartbeat(ctx context.Context, now time.Time, ep *endpoint) bool {
	var n int
	err, _ := f.bounded(ctx, func(ctx context.Context) error {
		var err error
		n, err = f.store.Heartbeat(ctx, f.cfg.Node, f.cfg.NodeTTL)
		return err
	})
	if err != nil {
		f.failed(ep, err, f.cfg.Now())
		return false
	}
	f.lastBeat = now
	f.nodes.Store(int64(max(n, 1)))
	f.met.nodes.Set(float64(max(n, 1)))
	ep.br.Success()
	f.lastOK.Store(f.cfg.Now().UnixNano())
	return true
}

// bounded runs call with a Deadline context and returns by the deadline
// (plus a little) even if the call does not: a client stuck on a full
// socket buffer to a blackholed server must not hold the flush loop, or the
// breaker would never see the failures. A late call is left to finish on
// its own; its results are not used.
func (f *Fleet) bounded(ctx context.Context, call func(context.Context) error) (err error, inTime bool) {
	cctx, cancel := context.WithTimeout(ctx, f.cfg.Deadline)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- call(cctx) }()
	grace := time.NewTimer(f.cfg.Deadline + f.cfg.Deadline/2)
	defer grace.Stop()
	select {
	case err := <-done:
		return err, true
	case <-grace.C:
		return context.DeadlineExceeded, false
	}
}

func (f *Fleet) failed(ep *endpoint, err error, now time.Time) {
	ep.br.Failure(now)
	outcome := "error"
	if ctxErr(err) {
		outcome = "timeout"
	}
	f.met.flushes.WithLabelValues(outcome).Inc()
	f.log.Debug("fleet: redis call failed", "endpoint", ep.name, "err", err)
}

func ctxErr(err error) bool {
	return err != nil && (err == context.DeadlineExceeded || isDeadline(err))
}

func isDeadline(err error) bool {
	type timeout interface{ Timeout() bool }
	for e := err; e != nil; {
		if e == context.DeadlineExceeded {
			return true
		}
		if t, ok := e.(timeout); ok && t.Timeout() {
			return true
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		e = u.Unwrap()
	}
	return false
}

// send applies ops (all on endpoint ep) under one deadline and settles
// them, with refs their key states.
func (f *Fleet) send(ctx context.Context, ep *endpoint, ops []Op, refs []ref) bool {
	// The call writes only into st and er. A call that outlives the
	// deadline keeps writing into them while this goroutine goes on, so
	// then it reads fresh slices instead and never touches st or er again.
	st, er := make([]State, len(ops)), make([]error, len(ops))
	t0 := f.cfg.Now()
	err, inTime := f.bounded(ctx, func(ctx context.Context) error {
		return f.store.Apply(ctx, ops, st, er)
	})
	states, errs := st, er
	if !inTime {
		states, errs = make([]State, len(ops)), make([]error, len(ops))
	}
	if err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	}
	t1 := f.cfg.Now()
	f.met.duration.Observe(t1.Sub(t0).Seconds())
	if err != nil {
		f.failed(ep, err, t1)
		for i := range ops {
			ok := errs[i] == nil
			if !ok && (errs[i] == nil || isDeadline(errs[i])) {
				refs[i].unknown = true
			}
			refs[i].c.settle(refs[i], states[i], ok)
		}
		return false
	}
	ep.br.Success()
	f.met.flushes.WithLabelValues("ok").Inc()
	f.lastOK.Store(t1.UnixNano())
	mid := t0.UnixNano() + t1.Sub(t0).Nanoseconds()/2
	f.off.Store(states[len(states)-1].Now*1000 - mid)
	var events float64
	for i := range ops {
		events += ops[i].Delta
		refs[i].c.settle(refs[i], states[i], true)
	}
	f.met.keys.Add(float64(len(ops)))
	f.met.events.Add(events)
	return true
}

// batch is one flush's ops and the key states they came from.
type batch struct {
	member string
	ops    []Op
	refs   []ref
}

type ref struct {
	c      *Counter
	key    uint64 // as stored (never 0)
	gen    uint32 // the slot's generation: a key made again is another ledger
	delta  float64
	at     int64
	rel    float64
	relWin int64
	// unknown: the op missed its deadline, Redis may have applied it
	unknown bool
}

// Counter is one rule's fleet-wide counter. Add answers from this node's
// view, without a network round trip: the global state last read back,
// advanced to now, plus this node's deltas not yet reflected in it.
type Counter struct {
	f        *Fleet
	rule     Rule
	p        params
	prefix   string
	keys     counting.Sharded[int64, keyState, ledgers]
	pass     uint64 // collect passes; only the flush loop touches it
	dueNodes int    // live nodes at the last full pass

	decisions [numDecisions]prometheus.Counter
}

// fullEvery: a flush looks at every key (idle leases to hand back once
// others have used up the key's headroom, leases of closed windows, keys to
// forget) once every fullEvery flush intervals, however often kicks flush.
const fullEvery = 20

// keyState is one key's ledger on this node.
type keyState struct {
	s State // global state last read back

	// lease is what this node may still admit without asking Redis: it was
	// counted there when granted. leaseWin is the window it was granted in
	// (the grant time for sliding_log).
	lease    float64
	leaseWin int64
	extra    float64 // counted beyond any lease, not sent yet
	extraAt  int64   // Redis time (µs) of the oldest such event
	// quietTo: extra is a lone node's quiet count of a shaper's key (see
	// Counter.quietLocked), never sent unless another node joins; Redis
	// time (µs) when the bucket has refilled it and it is forgotten. 0:
	// extra, if any, is to be sent.
	quietTo int64
	fly     float64 // extra sent, not acknowledged
	rel     float64 // lease to hand back (its window rolled, or the key idled)
	relWin  int64
	grant   float64 // the last grant that gave something (0: none yet)
	demand  float64 // event weight asked for since the last flush
	used    int64   // Redis time (µs) of the last Add
	pass    uint64  // the last collect pass that looked at it
	have    bool    // s is valid
	asked   bool    // a grant is in flight
	queued  bool    // on its shard's dirty list
	active  bool    // used since a flush last looked at it (or its last send failed)
	gen     uint32  // tells this ledger from one made later for the same key
}

// inLease reports whether a key needs no command: it is still well inside
// its lease, and asks again when the lease is half spent (or at once,
// through a kick, when it is gone). Add lists such a key for no flush, and
// a flush leaves it alone: the next Add that spends the lease lists it.
func (ks *keyState) inLease() bool {
	return ks.extra == 0 && ks.rel == 0 && ks.grant > 0 && ks.lease >= ks.grant/2 && !ks.asked
}

// Rule returns the rule the counter was made for.
func (c *Counter) Rule() Rule { return c.rule }

func (c *Counter) window(s State, rnow int64) int64 {
	switch c.p.alg {
	case counting.SlidingWindow, counting.FixedWindow:
		return rnow / c.p.period
	}
	return 0
}

// Add counts an event of size n for key at now (unix ns, the caller's
// clock) and judges it like counting.Table.Add, against the fleet-wide
// count: the rule engine's counter. It never waits on the network. While
// Redis answers, a refused event is not counted (see doc.go); under
// on_store_error local the window algorithms count it, as a Table does.
func (c *Counter) Add(key uint64, n float64, now int64) counting.Result {
	return c.add(key, n, now, false)
}

// Admit is Add for request-time limits (mitigation/throttle's Counter):
// a refused request is never counted.
func (c *Counter) Admit(key uint64, n float64, now int64) counting.Result {
	return c.add(key, n, now, true)
}

func (c *Counter) add(key uint64, n float64, now int64, admit bool) counting.Result {
	f := c.f
	healthy := f.healthy.Load() || f.eps.healthyKey(c, key)
	if !healthy {
		switch c.rule.OnError {
		case Open:
			c.decisions[byOpen].Inc()
			return counting.Result{Remaining: c.p.limit}
		case Closed:
			c.decisions[byClosed].Inc()
			return counting.Result{Count: c.p.limit, Exceeded: true, RetryAfter: f.cfg.Cooldown}
		}
	}
	rnow := (now + f.off.Load()) / 1000
	sh, key, hash := c.keys.Place(key)
	sh.Lock()
	ks, slot := c.ledgerLocked(sh, key, hash, rnow)
	gap := rnow - ks.used
	ks.used = rnow
	ks.active = true
	ks.demand += n
	c.ageLocked(ks, rnow)
	var st State
	if ks.have {
		st = ks.s
	}
	st = c.p.advance(st, rnow)
	if ks.rel > 0 {
		st = c.p.released(st, ks.rel, ks.relWin, rnow)
	}
	nodes := float64(f.nodes.Load())
	// A lone node's shaper: a slow client's events need no script (see
	// quietLocked).
	lone := nodes == 1 && c.shaper()
	slow := gap > slowGap*f.cfg.FlushInterval.Microseconds()
	var r counting.Result
	by := byFleet
	kick := false
	quiet := false
	switch {
	case c.rule.Detection:
		extra := ks.extra + ks.fly
		if !healthy {
			extra = ks.extra*nodes + ks.fly
			by = byLocal
		}
		var consume bool
		r, consume = c.p.judge(st, rnow, extra, n)
		if consume {
			if ks.extra == 0 {
				ks.extraAt = rnow
			}
			ks.extra += n
		}
	case ks.lease >= n:
		// Admitted on the lease; the view shows the unused part of it as
		// free.
		ks.lease -= n
		r, _ = c.p.judge(st, rnow, ks.extra+ks.fly-ks.lease, 0)
		r.Exceeded, r.RetryAfter = false, 0
		// A lone node's slow client spends its lease out without asking
		// for the next one: its next request is a quiet one.
		kick = healthy && ks.lease < n && !ks.asked && !(lone && slow)
	default:
		extra := ks.extra + ks.fly - ks.lease
		if !healthy {
			// Local: this node's own counts since Redis last answered,
			// scaled to the fleet, against the budget: its share of it.
			extra = ks.extra*nodes + ks.fly - ks.lease
			by = byLocal
		}
		var consume bool
		r, consume = c.p.judge(st, rnow, extra, n)
		if (healthy || admit) && r.Exceeded {
			// Refused against a fleet view in which other nodes' leases
			// count as used: counting the refusal would spend budget
			// those leases may hand back. In fleet mode the count is the
			// budget admitted.
			consume = false
		}
		pending := ks.extra + ks.fly
		if ks.quietTo != 0 {
			// Quiet events wait for no grant: past the allowance they
			// are sent with this one (docs/fleet.md, the error bound).
			pending -= ks.extra
		}
		allowance := f.cfg.ColdShare * c.p.capacity() / nodes
		// Below one event per node (a limit under nodes/ColdShare), a
		// node with peers admits nothing beyond its lease to a stream of
		// requests once its view shows less than half the capacity free
		// (where grants are cut to what a node asks for, and the others'
		// may have taken the rest since this view was read): the grant
		// it asked for is a round trip away. A client's first request on
		// a node, or a slow client's (more than slowGap flush intervals
		// after its last), does not wait: for it a wait is a refusal.
		exact := allowance < 1 && nodes > 1 && ks.have && !slow && r.Remaining < c.p.capacity()/2
		allowance = max(1, allowance)
		if healthy && !r.Exceeded && (exact || pending > 0 && pending+n > allowance) {
			// No lease left, and this node's events beyond leases have
			// used its allowance (ColdShare of the capacity, split among
			// the nodes, at least one event): wait for the grant the
			// flush kicked now brings. The allowance is what the fleet
			// can overshoot by, since Redis cannot see these events when
			// it grants leases to the other nodes.
			by, consume = byLeaseWait, false
			r.Exceeded, r.Remaining, r.RetryAfter = true, 0, f.cfg.FlushInterval
		}
		if consume {
			if ks.extra == 0 {
				ks.extraAt = rnow
			}
			ks.extra += n
			quiet = healthy && by == byFleet && lone && ks.extra <= allowance && ks.fly == 0 && ks.rel == 0 && !ks.asked
		}
		// A refusal on the fleet view kicks no flush: the budget is spent
		// until the view says otherwise, and a hot refused key would
		// otherwise make every request a flush. Nor does the last event
		// of the budget on a lone node (no other node can hand any
		// back): the grant would be nothing, and a refused key whose view
		// refills would kick a flush for each event it refills; the
		// next flush sends the event.
		kick = healthy && !ks.asked && (by == byLeaseWait || !r.Exceeded && (nodes > 1 || r.Remaining >= 1))
	}
	if !quiet {
		ks.quietTo = 0
	}
	switch {
	case ks.inLease():
	case healthy && by == byFleet && !r.Exceeded && slow &&
		(ks.lease >= n || lone) && ks.extra == 0 && ks.rel == 0 && ks.grant > 0 && !ks.asked:
		// A slow client (this request came more than slowGap flush
		// intervals after its last): its lease lasts it, so it asks
		// when the lease cannot cover another event like this one (the
		// lease branch above kicks a flush then) or when the client
		// speeds up, not when half of it is spent: one script per
		// lease, not two (docs/fleet.md, "Sizing"). A lone node's shaper
		// does not ask even then: the client's next request is quiet.
		// With other nodes a full pass looks at every key holding a
		// lease: this request is no demand for it to ask for.
		ks.demand -= n
		ks.active = false
	case quiet:
		c.quietLocked(ks)
		ks.demand -= n
		ks.active = false
		kick = false
	case healthy && by == byFleet && !c.rule.Detection && !ks.queued && !ks.asked && ks.fly == 0 && c.spentAloneLocked(ks, st, rnow, int(nodes)):
		// Alone, and Redis has no budget left to grant (this node may
		// hold the rest as its lease): the next flush would only find
		// that (judgeLocked) and forget this request's demand. A hot key
		// costs no flush a look, nor a script, until its view shows
		// headroom again (a window rolls, a bucket refills).
		ks.demand -= n
		ks.active = false
		kick = false
	default:
		queueLocked(sh, key, ks)
		if slot >= 0 {
			*sh.Val(slot) = 0
		}
	}
	sh.Unlock()
	if kick {
		select {
		case f.kick <- struct{}{}:
		default:
		}
	}
	c.decisions[by].Inc()
	return r
}

// shaper reports whether the rule's algorithm refills over time
// (token_bucket, gcra) rather than counting in windows.
func (c *Counter) shaper() bool {
	return c.p.alg == counting.TokenBucket || c.p.alg == counting.GCRA
}

// quietLocked makes a lone node's unsent events of a shaper's key quiet:
// they are kept, not sent, until the bucket has refilled them, and then
// forgotten, as Redis would have forgotten them. While the node is alone
// (no other node can be granted what they used) and its events stay
// within the cold allowance, a client under its rate costs no script at
// all, where a lease would cost one per lease. The events are sent if
// another node joins or the key goes past the allowance; a node that
// stops loses them, which is no more than the allowance per key
// (docs/fleet.md, the error bound).
//
// quietTo is when the bucket, as this node last read it, has refilled the
// events, counting all of them at the first one's time: Redis's usage then
// (the refill of a lone node's key changes only by its own scripts, and a
// quiet key sends none) plus the events, at the rule's interval each.
func (c *Counter) quietLocked(ks *keyState) {
	u := c.p.usage(c.p.advance(ks.s, ks.extraAt), ks.extraAt)
	ks.quietTo = ks.extraAt + int64(math.Ceil((u+ks.extra)*c.p.interval))
}

// ageLocked voids a lease whose window has closed (handing it back, so the
// window it was counted in can be corrected) and drops extra counts of a
// closed window.
func (c *Counter) ageLocked(ks *keyState, rnow int64) {
	if ks.quietTo != 0 && (rnow >= ks.quietTo || c.stale(ks.extraAt, rnow)) {
		// Refilled: forgotten, not dropped.
		ks.extra, ks.quietTo = 0, 0
	}
	if ks.extra > 0 && c.stale(ks.extraAt, rnow) {
		c.f.met.dropped.Add(ks.extra)
		ks.extra = 0
	}
	if ks.lease <= 0 {
		return
	}
	switch c.p.alg {
	case counting.SlidingWindow, counting.FixedWindow:
		if ks.leaseWin != rnow/c.p.period {
			ks.rel, ks.relWin = ks.lease, ks.leaseWin
			ks.lease = 0
		}
	case counting.SlidingLog:
		if rnow-ks.leaseWin >= c.p.period { // the grant left the log
			ks.lease = 0
		}
	}
}

// stale reports whether an event counted at Redis time at belongs to a
// window that has closed by now: it is dropped rather than sent.
func (c *Counter) stale(at, now int64) bool {
	switch c.p.alg {
	case counting.FixedWindow:
		return at/c.p.period < now/c.p.period
	case counting.SlidingWindow:
		return at/c.p.period < now/c.p.period-1
	}
	return now-at >= c.p.period
}

// ledgerLocked returns key's ledger (hash is the key's, from Place), made
// if new. In a full shard, keys idle for two periods go first; if none is,
// the new key gets the shard's spare ledger, which is not kept (the key is
// judged as new each time).
func (c *Counter) ledgerLocked(sh *cshard, key, hash uint64, now int64) (*keyState, int) {
	i, found := sh.Claim(key, hash)
	if i < 0 {
		i = sh.Make(key, func() int { c.sweepLocked(sh, now); return -1 })
	}
	if i < 0 {
		sh.Ext.spare = keyState{queued: true} // listed nowhere
		return &sh.Ext.spare, -1
	}
	ks := sh.Side(i)
	if !found { // a new ledger: tell it from those the key had before
		sh.Ext.gen++
		ks.gen = sh.Ext.gen
	}
	return ks, i
}

func (c *Counter) sweepLocked(sh *cshard, now int64) {
	for i := range sh.All() {
		ks := sh.Side(i)
		if ks.quietTo != 0 {
			c.ageLocked(ks, now) // refilled quiet events do not keep a key
		}
		if ks.extra == 0 && ks.fly == 0 && c.idleLease(ks) && !ks.asked && now-ks.used > 2*c.p.period {
			sh.Delete(i)
		}
	}
}

// collect adds an op for each key used since the last flush (its extra
// counts, a grant request) or holding a lease it no longer uses (handed
// back). It looks at the shards' dirty keys, or at every key when full.
func (c *Counter) collect(b *batch, nowNS int64, full bool) {
	now := nowNS / 1000
	nodes := int(c.f.nodes.Load())
	c.pass++
	// A full pass looks at the keys that are due; at every key when the
	// number of nodes changed (which changes what is due).
	all := full && nodes != c.dueNodes
	if full {
		c.dueNodes = nodes
	}
	shards := c.keys.Shards()
	for si := range shards {
		sh := &shards[si]
		sh.Lock()
		list := sh.Ext.dirty
		sh.Ext.dirty = list[:0]
		if full {
			for _, k := range list {
				if i := sh.Lookup(k); i >= 0 {
					sh.Side(i).queued = false
				}
			}
			for i, due := range sh.All() {
				if (*due <= now || all) && sh.Side(i).pass != c.pass {
					c.visitLocked(b, sh, i, now, nodes) // may delete i
				}
			}
		} else {
			// sh.Ext.dirty reuses list's array: appends never overtake the
			// reading, as each key read appends at most itself.
			for _, k := range list {
				i := sh.Lookup(k)
				if i < 0 || sh.Side(i).pass == c.pass {
					continue // gone, or listed twice (deleted and made again)
				}
				sh.Side(i).queued = false
				c.visitLocked(b, sh, i, now, nodes)
			}
		}
		sh.Unlock()
	}
}

// visitLocked is collect for the key in slot i: it adds the key's op, if
// it needs one, and lists the key for the next flush if that must look at
// it again (it was used, or something is in flight). It deletes the key
// when it is forgotten (after two idle periods).
func (c *Counter) visitLocked(b *batch, sh *cshard, i int, now int64, nodes int) {
	k, ks := sh.Key(i), sh.Side(i)
	ks.pass = c.pass
	if again := c.judgeLocked(b, k, ks, now, nodes); again == forget {
		sh.Delete(i)
		return
	} else if again == keep {
		queueLocked(sh, k, ks)
	}
	*sh.Val(i) = c.dueLocked(ks, nodes)
}

// dueLocked is the Redis time from which a full pass must look at a key
// again, if nothing happens to it before (an Add or a reply makes it due
// at once): when its lease's window closes (handed back), or when it may
// be forgotten. A key with something pending, or with a lease that may
// have to go back to other nodes, is always due.
func (c *Counter) dueLocked(ks *keyState, nodes int) int64 {
	if ks.asked || ks.fly != 0 || ks.rel != 0 {
		return 0
	}
	if ks.extra != 0 && (ks.quietTo == 0 || nodes > 1) {
		// Quiet events need no look: the key's next Add forgets them
		// once refilled, and a join looks at every key.
		return 0
	}
	if ks.lease > 0 && nodes > 1 && c.p.alg != counting.SlidingLog {
		return 0
	}
	due := ks.used + 2*c.p.period + 1
	if ks.lease > 0 {
		switch c.p.alg {
		case counting.SlidingWindow, counting.FixedWindow:
			due = min(due, (ks.leaseWin+1)*c.p.period)
		case counting.SlidingLog:
			due = min(due, ks.leaseWin+c.p.period)
		}
	}
	return due
}

// idleLease reports whether a key idle for two periods may be forgotten
// with the lease it holds: none, or a shaper's (token_bucket, gcra), which
// Redis has refilled by then anyway. Dropping a lease can only
// under-admit. A window's lease goes back when its window closes.
func (c *Counter) idleLease(ks *keyState) bool {
	return ks.lease == 0 || c.p.alg == counting.TokenBucket || c.p.alg == counting.GCRA
}

// What a flush does with a key after looking at it.
type after uint8

const (
	leave  after = iota // its next Add lists it again
	keep                // the next flush looks at it again
	forget              // idle for two periods, nothing held: delete it
)

func (c *Counter) judgeLocked(b *batch, k uint64, ks *keyState, now int64, nodes int) after {
	if ks.asked {
		return keep // an earlier op for this key failed mid-way; settle clears it
	}
	c.ageLocked(ks, now)
	active := ks.active
	if ks.quietTo != 0 {
		if nodes == 1 && !active && ks.fly == 0 && ks.rel == 0 {
			return leave // still alone: the events wait to be refilled
		}
		ks.quietTo = 0 // another node joined: they are sent now
	}
	if !active && ks.extra == 0 && ks.rel == 0 && ks.fly == 0 && c.idleLease(ks) && now-ks.used > 2*c.p.period {
		return forget
	}
	if !active && ks.lease > 0 && c.p.alg != counting.SlidingLog && nodes > 1 &&
		c.p.capacity()-c.p.usage(c.p.advance(ks.s, now), now) < c.p.capacity()/2 {
		// Idle for a flush interval with less than half the
		// capacity left: hand the lease back, the others may need
		// it. With more left, or no other node, keeping it costs
		// nobody anything and spares a quiet key two scripts per
		// request.
		ks.rel, ks.relWin = ks.rel+ks.lease, ks.leaseWin
		if c.p.alg == counting.TokenBucket || c.p.alg == counting.GCRA {
			ks.relWin = 0
		}
		ks.lease = 0
	}
	if ks.inLease() {
		return leave
	}
	if !active && ks.extra == 0 && ks.rel == 0 {
		if ks.fly == 0 && ks.lease == 0 && now-ks.used > 2*c.p.period {
			return forget
		}
		if ks.fly > 0 {
			return keep
		}
		return leave
	}
	// Ask for twice this flush interval's demand: enough to last
	// until the next flush at the same rate. Once less than half
	// the capacity is left, Redis grants no more than that, and a
	// lease above twice the ask goes back: a node that sees little
	// of a key's traffic does not sit on budget the others need.
	want := 0.0
	if active && !c.rule.Detection {
		// With peers, the demand since the key was last sent per flush
		// interval: a key that spends a lease over several intervals asks
		// for twice its rate, not for all it used since (Redis paces
		// grants by it). A lone node is not paced and keeps its asks.
		d := ks.demand
		if fl := c.f.cfg.FlushInterval.Microseconds(); nodes > 1 && ks.have && now-ks.s.Now > fl {
			d = d * float64(fl) / float64(now-ks.s.Now)
		}
		want = max(1, 2*d)
		if ks.have && nodes > 1 && ks.lease > 2*want && c.p.capacity()-c.p.usage(c.p.advance(ks.s, now), now) < c.p.capacity()/2 {
			back := ks.lease - want
			ks.rel, ks.relWin = ks.rel+back, ks.leaseWin
			if c.p.alg == counting.TokenBucket || c.p.alg == counting.GCRA {
				ks.relWin = 0
			}
			ks.lease = want
		}
	}
	if want > 0 && c.spentAloneLocked(ks, c.p.advance(ks.s, now), now, nodes) {
		// Alone in the fleet with the key's budget spent: no other node
		// can hand any back, so asking Redis would only hear the same.
		// The view ages (windows roll, buckets refill) and the next Add
		// asks once it shows headroom.
		ks.demand = 0
		ks.active = false
		return leave
	}
	ks.demand = 0
	b.ops = append(b.ops, Op{
		Alg: c.p.alg, Key: c.redisKey(k), Delta: ks.extra,
		Release: ks.rel, RelWin: ks.relWin, Held: ks.lease, Want: want, Nodes: nodes,
		Period: c.p.period, Limit: c.p.limit, Burst: c.p.burst, Member: b.member, Flush: c.f.cfg.FlushInterval.Microseconds(),
	})
	b.refs = append(b.refs, ref{c: c, key: k, gen: ks.gen, delta: ks.extra, at: ks.extraAt, rel: ks.rel, relWin: ks.relWin})
	ks.fly += ks.extra
	ks.extra, ks.rel = 0, 0
	ks.asked = active
	ks.active = false
	return keep
}

// spentAloneLocked reports whether a key needs no script although it is in
// use: this node is alone in the fleet (no other node can hand budget
// back), has nothing to send, and Redis has no room for one more event
// (view, the key's global state advanced to now, counts the lease this
// node holds, if any, as used): a grant would be nothing.
func (c *Counter) spentAloneLocked(ks *keyState, view State, now int64, nodes int) bool {
	return nodes == 1 && ks.have && ks.extra == 0 && ks.rel == 0 &&
		c.p.capacity()-c.p.usage(view, now) < 1
}

func (c *Counter) redisKey(k uint64) string {
	var buf [64]byte
	b := append(buf[:0], c.prefix...)
	b = strconv.AppendUint(b, k, 16)
	b = append(b, '}')
	return string(b)
}

// settle records the answer to one op: the new global state and the
// lease granted, or on failure the counts go back to pending, to be sent
// after recovery if their window is still open.
func (c *Counter) settle(r ref, s State, ok bool) {
	sh := c.keys.For(r.key)
	sh.Lock()
	defer sh.Unlock()
	i := sh.Lookup(r.key)
	if i < 0 || sh.Side(i).gen != r.gen {
		return // forgotten meanwhile (swept from a full shard): nothing to settle
	}
	ks := sh.Side(i)
	ks.asked = false
	*sh.Val(i) = 0
	queueLocked(sh, r.key, ks)
	ks.fly -= r.delta
	if math.Abs(ks.fly) < 1e-9 {
		ks.fly = 0
	}
	if ok {
		ks.s, ks.have = s, true
		if s.Grant > 0 {
			win := c.window(s, s.Now)
			if c.p.alg == counting.SlidingLog {
				if ks.lease == 0 {
					ks.leaseWin = s.Now
				}
			} else if ks.lease > 0 && ks.leaseWin != win {
				ks.rel, ks.relWin = ks.rel+ks.lease, ks.leaseWin
				ks.lease = 0
			}
			if c.p.alg != counting.SlidingLog {
				ks.leaseWin = win
			}
			ks.lease += s.Grant
			if (c.p.alg == counting.TokenBucket || c.p.alg == counting.GCRA) && ks.lease > c.p.burst {
				// A shaper's bucket refills while a lease is held: Redis
				// counted the held part when it granted it and has since
				// forgotten it, so held plus a new grant could pass the
				// burst. The node keeps at most a full bucket (the excess
				// was counted in Redis and is never used: it can only
				// under-admit).
				ks.lease = c.p.burst
			}
			ks.grant = s.Grant
		}
		// A reply that grants nothing leaves the last grant as the
		// measure of the lease: a key still holding most of it (a second
		// event counted while its first grant was on the way, then sent
		// with a held lease and refused more) stays quiet until it is
		// half spent, rather than sending a script with every use.
		return
	}
	if r.delta > 0 {
		if ks.extra == 0 || r.at < ks.extraAt {
			ks.extraAt = r.at
		}
		ks.extra += r.delta
	}
	if r.rel > 0 && !r.unknown {
		// The hand-back did not happen (the connection failed): the node
		// still owns the lease, if its window is still open. After a
		// missed deadline it may have happened: the lease is dropped,
		// which can only under-admit.
		ks.lease += r.rel
		ks.leaseWin = r.relWin
		c.ageLocked(ks, ks.used)
	}
	ks.active = true
}

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

	breaker *Breaker
	healthy atomic.Bool
	off     atomic.Int64 // Redis time minus local time, ns
	nodes   atomic.Int64 // live nodes, >= 1
	kick    chan struct{}

	mu       sync.Mutex
	counters []*Counter
	seq      uint64
	lastBeat time.Time
	lastOK   atomic.Int64 // unix ns of the last successful round trip
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
	f.nodes.Store(1)
	f.breaker = NewBreaker(cfg.Threshold, cfg.Cooldown, func(s BreakerState) {
		f.healthy.Store(s == BreakerClosed)
		for st := range numBreakerStates {
			v := 0.0
			if st == s {
				v = 1
			}
			met.breaker.WithLabelValues(st.String()).Set(v)
		}
		log.Info("fleet: redis circuit breaker", "state", s.String())
	})
	f.healthy.Store(true)
	met.breaker.WithLabelValues(BreakerClosed.String()).Set(1)
	met.nodes.Set(1)
	return f, nil
}

// Counter returns the fleet-wide counter of one rule.
func (f *Fleet) Counter(r Rule) (*Counter, error) {
	p, err := newParams(r)
	if err != nil {
		return nil, err
	}
	c := &Counter{f: f, rule: r, p: p, prefix: "guardd:{" + r.Name + ":"}
	c.perShard = max(f.cfg.MaxKeys/counterShards, 1)
	for i := range c.shards {
		c.shards[i].m = make(map[uint64]*keyState)
	}
	for m := range numOnError {
		c.decisions[m] = f.met.decisions.WithLabelValues(m.String())
	}
	c.fleetDecisions = f.met.decisions.WithLabelValues("fleet")
	f.mu.Lock()
	f.counters = append(f.counters, c)
	f.mu.Unlock()
	return c, nil
}

// Healthy reports whether counts are fleet-wide now (the breaker is
// closed); when false each rule answers by its OnError.
func (f *Fleet) Healthy() bool { return f.healthy.Load() }

// Status is what guardd status shows of the fleet.
type Status struct {
	Node      string
	Breaker   string
	LiveNodes int
	// LastContact is when Redis last answered; zero if never.
	LastContact time.Time
	// ClockOffset is Redis time minus this node's clock.
	ClockOffset time.Duration
}

// Status returns the fleet's state now.
func (f *Fleet) Status() Status {
	s := Status{Node: f.cfg.Node, Breaker: f.breaker.State().String(), LiveNodes: int(f.nodes.Load()), ClockOffset: time.Duration(f.off.Load())}
	if ns := f.lastOK.Load(); ns != 0 {
		s.LastContact = time.Unix(0, ns)
	}
	return s
}

// Run flushes every FlushInterval, and sooner when a lease is used up,
// until ctx ends; it then flushes once more, briefly, and returns nil.
func (f *Fleet) Run(ctx context.Context) error {
	t := time.NewTicker(f.cfg.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			f.Flush(context.Background())
			return nil
		case <-t.C:
		case <-f.kick:
		}
		f.Flush(ctx)
	}
}

// Flush sends every pending delta (and reads back the state of keys used
// since the last flush) now. Run calls it; tests and benchmarks may too.
func (f *Fleet) Flush(ctx context.Context) {
	now := f.cfg.Now()
	ok, probe := f.breaker.Allow(now)
	if !ok {
		f.met.flushes.WithLabelValues("skipped").Inc()
		return
	}
	if probe || now.Sub(f.lastBeat) >= f.cfg.NodeTTL/3 {
		if !f.heartbeat(ctx, now) {
			return
		}
	}
	f.mu.Lock()
	counters := f.counters
	f.seq++
	member := f.cfg.Node + ":" + strconv.FormatUint(f.seq, 10)
	f.mu.Unlock()

	b := batch{member: member}
	for _, c := range counters {
		c.collect(&b, now.UnixNano()+f.off.Load())
	}
	for start := 0; start < len(b.ops); start += BatchSize {
		end := min(start+BatchSize, len(b.ops))
		if !f.send(ctx, &b, start, end) {
			// Requeue the rest for after recovery.
			for i := end; i < len(b.ops); i++ {
				b.refs[i].c.settle(b.refs[i], State{}, false)
			}
			return
		}
	}
}

func (f *Fleet) heartbeat(ctx context.Context, now time.Time) bool {
	cctx, cancel := context.WithTimeout(ctx, f.cfg.Deadline)
	n, err := f.store.Heartbeat(cctx, f.cfg.Node, f.cfg.NodeTTL)
	cancel()
	if err != nil {
		f.failed(err, f.cfg.Now())
		return false
	}
	f.lastBeat = now
	f.nodes.Store(int64(max(n, 1)))
	f.met.nodes.Set(float64(max(n, 1)))
	f.breaker.Success()
	f.lastOK.Store(f.cfg.Now().UnixNano())
	return true
}

func (f *Fleet) failed(err error, now time.Time) {
	f.breaker.Failure(now)
	outcome := "error"
	if ctxErr(err) {
		outcome = "timeout"
	}
	f.met.flushes.WithLabelValues(outcome).Inc()
	f.log.Debug("fleet: redis call failed", "err", err)
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

// send applies ops[start:end] under one deadline and settles them.
func (f *Fleet) send(ctx context.Context, b *batch, start, end int) bool {
	ops := b.ops[start:end]
	states := make([]State, len(ops))
	errs := make([]error, len(ops))
	t0 := f.cfg.Now()
	cctx, cancel := context.WithTimeout(ctx, f.cfg.Deadline)
	err := f.store.Apply(cctx, ops, states, errs)
	cancel()
	t1 := f.cfg.Now()
	f.met.duration.Observe(t1.Sub(t0).Seconds())
	if err != nil {
		f.failed(err, t1)
		for i := range ops {
			ok := errs[i] == nil
			b.refs[start+i].c.settle(b.refs[start+i], states[i], ok)
		}
		return false
	}
	f.breaker.Success()
	f.met.flushes.WithLabelValues("ok").Inc()
	f.lastOK.Store(t1.UnixNano())
	mid := t0.UnixNano() + t1.Sub(t0).Nanoseconds()/2
	f.off.Store(states[len(states)-1].Now*1000 - mid)
	var events float64
	for i := range ops {
		events += ops[i].Delta
		b.refs[start+i].c.settle(b.refs[start+i], states[i], true)
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
	c     *Counter
	key   uint64
	ks    *keyState
	delta float64
	at    int64
}

const counterShards = 64

// Counter is one rule's fleet-wide counter. Add answers from this node's
// view, without a network round trip: the global state last read back,
// advanced to now, plus this node's deltas not yet reflected in it.
type Counter struct {
	f        *Fleet
	rule     Rule
	p        params
	prefix   string
	perShard int
	shards   [counterShards]cshard

	decisions      [numOnError]prometheus.Counter
	fleetDecisions prometheus.Counter
}

type cshard struct {
	mu sync.Mutex
	m  map[uint64]*keyState
	_  [48]byte
}

type keyState struct {
	s      State   // global state last read back
	have   bool    // s is valid
	pend   float64 // counted here, not sent yet
	pendAt int64   // Redis time (µs) of the oldest pending event
	fly    float64 // sent, not acknowledged
	used   int64   // Redis time (µs) of the last Add
	read   int64   // Redis time (µs) of the last read-back
}

// Rule returns the rule the counter was made for.
func (c *Counter) Rule() Rule { return c.rule }

// Add counts an event of size n for key at now (unix ns, the caller's
// clock) and judges it like counting.Table.Add, against the fleet-wide
// count. It never waits on the network.
func (c *Counter) Add(key uint64, n float64, now int64) counting.Result {
	f := c.f
	healthy := f.healthy.Load()
	if !healthy {
		switch c.rule.OnError {
		case Open:
			c.decisions[Open].Inc()
			return counting.Result{Remaining: c.p.limit}
		case Closed:
			c.decisions[Closed].Inc()
			return counting.Result{Count: c.p.limit, Exceeded: true, RetryAfter: f.cfg.Cooldown}
		}
	}
	rnow := (now + f.off.Load()) / 1000
	sh := &c.shards[mix(key)&(counterShards-1)]
	sh.mu.Lock()
	ks := sh.m[key]
	if ks == nil {
		if len(sh.m) >= c.perShard {
			c.sweepLocked(sh, rnow)
		}
		ks = &keyState{}
		if len(sh.m) < c.perShard {
			sh.m[key] = ks
		}
	}
	ks.used = rnow
	if ks.pend > 0 && c.stale(ks.pendAt, rnow) {
		f.met.dropped.Add(ks.pend)
		ks.pend = 0
	}
	var st State
	if ks.have {
		st = ks.s
	}
	st = c.p.advance(st, rnow)
	extra := ks.pend + ks.fly
	nodes := float64(f.nodes.Load())
	if !healthy {
		// Local: this node's own counts since the last read-back, scaled
		// to the fleet, against the whole budget — its share of it.
		extra = ks.pend*nodes + ks.fly
	}
	r, consume := c.p.judge(st, rnow, extra, n)
	kick := false
	if consume {
		if ks.pend == 0 {
			ks.pendAt = rnow
		}
		ks.pend += n
		if healthy && !r.Exceeded {
			capacity := c.p.limit
			if c.p.alg == counting.TokenBucket || c.p.alg == counting.GCRA {
				capacity = c.p.burst
			}
			lease := (capacity - c.p.usage(st, rnow)) / nodes
			kick = ks.pend >= lease
		}
	}
	sh.mu.Unlock()
	if kick {
		select {
		case f.kick <- struct{}{}:
		default:
		}
	}
	if healthy {
		c.fleetDecisions.Inc()
	} else {
		c.decisions[Local].Inc()
	}
	return r
}

// stale reports whether a delta counted at Redis time at belongs to a
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

func (c *Counter) sweepLocked(sh *cshard, now int64) {
	for k, ks := range sh.m {
		if ks.pend == 0 && ks.fly == 0 && now-ks.used > 2*c.p.period {
			delete(sh.m, k)
		}
	}
}

// collect moves pending deltas to in-flight and adds an op for each key
// with a delta or used since its last read-back.
func (c *Counter) collect(b *batch, nowNS int64) {
	now := nowNS / 1000
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		for k, ks := range sh.m {
			if ks.pend > 0 && c.stale(ks.pendAt, now) {
				c.f.met.dropped.Add(ks.pend)
				ks.pend = 0
			}
			if ks.pend == 0 && ks.used <= ks.read {
				if ks.fly == 0 && now-ks.used > 2*c.p.period {
					delete(sh.m, k)
				}
				continue
			}
			b.ops = append(b.ops, Op{
				Alg: c.p.alg, Key: c.redisKey(k), Delta: ks.pend,
				Period: c.p.period, Limit: c.p.limit, Burst: c.p.burst, Member: b.member,
			})
			b.refs = append(b.refs, ref{c: c, key: k, ks: ks, delta: ks.pend, at: ks.pendAt})
			ks.fly += ks.pend
			ks.pend = 0
			ks.read = ks.used
		}
		sh.mu.Unlock()
	}
}

func (c *Counter) redisKey(k uint64) string {
	var buf [64]byte
	b := append(buf[:0], c.prefix...)
	b = strconv.AppendUint(b, k, 16)
	b = append(b, '}')
	return string(b)
}

// settle records the answer to one op: the new global state, or on
// failure the delta goes back to pending, to be sent after recovery if
// its window is still open.
func (c *Counter) settle(r ref, s State, ok bool) {
	sh := &c.shards[mix(r.key)&(counterShards-1)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	r.ks.fly -= r.delta
	if math.Abs(r.ks.fly) < 1e-9 {
		r.ks.fly = 0
	}
	if ok {
		r.ks.s, r.ks.have = s, true
		return
	}
	if r.delta > 0 {
		if r.ks.pend == 0 || r.at < r.ks.pendAt {
			r.ks.pendAt = r.at
		}
		r.ks.pend += r.delta
	}
	r.ks.read = 0
}

func mix(key uint64) uint64 {
	key ^= key >> 33
	key *= 0xff51afd7ed558ccd
	key ^= key >> 33
	return key
}

package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/guardd/guardd/counting/redis"
	"github.com/guardd/guardd/mitigation"
)

// Store is what Sync needs of the local table; *mitigation.Store has it.
type Store interface {
	Add(m mitigation.Mitigation, now time.Time) (mitigation.Mitigation, bool, error)
	Delete(id uint64) bool
	Snapshot(now time.Time) ([]mitigation.Mitigation, uint64)
	Changes(since uint64) (added, deleted []mitigation.Mitigation, cursor uint64, ok bool)
}

// Conn is what Sync needs of Redis; *redis.Conn has it.
type Conn interface {
	Publish(ctx context.Context, field string, payload []byte, expires time.Time, del bool) error
	Active(ctx context.Context) (last string, set map[string][]byte, err error)
	Read(ctx context.Context, after string, block time.Duration, count int) ([]redis.Change, error)
}

// Defaults of Config.
const (
	DefaultPoll     = 5 * time.Millisecond
	DefaultBlock    = time.Second
	DefaultDeadline = time.Second
	MaxPending      = 100_000
)

// Config configures a Sync; the zero value of each field but Node means
// its default.
type Config struct {
	Node string
	// Poll is how often the local change feed is read.
	Poll time.Duration
	// Block is how long one XREAD waits for a change.
	Block time.Duration
	// Deadline bounds one publish or load.
	Deadline time.Duration
	// Now is the wall clock; nil means time.Now.
	Now func() time.Time
}

// Sync keeps a Store in step with the fleet.
type Sync struct {
	cfg   Config
	store Store
	conn  Conn
	log   *slog.Logger
	met   *metrics

	mu      sync.Mutex
	cursor  uint64
	synced  bool                // cursor is valid
	byField map[string]uint64   // fleet identity -> local ID
	byID    map[uint64]string   // local ID -> fleet identity
	applied map[uint64]appliedM // remote changes applied here, not to echo
	deleted map[uint64]bool     // remote deletes applied here, not to echo
	pending map[string]pendingOp
	order   []string // pending fields in arrival order
	last    string   // stream ID last seen
}

type appliedM struct {
	expires time.Time
	action  mitigation.Action
}

type pendingOp struct {
	payload []byte
	expires time.Time
	del     bool
	at      time.Time
}

// wire is a mitigation as published.
type wire struct {
	Node      string            `json:"node"`
	Rule      string            `json:"rule"`
	Action    mitigation.Action `json:"action"`
	Scope     mitigation.Scope  `json:"scope"`
	Created   time.Time         `json:"created"`
	Expires   time.Time         `json:"expires"`
	Origin    string            `json:"origin,omitempty"`
	Published time.Time         `json:"published"`
}

// New validates cfg; it starts nothing.
func New(cfg Config, store Store, conn Conn, reg prometheus.Registerer, log *slog.Logger) (*Sync, error) {
	if cfg.Node == "" {
		return nil, errors.New("mitigation/fleet: no node name")
	}
	if store == nil || conn == nil {
		return nil, errors.New("mitigation/fleet: needs a store and a connection")
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Block <= 0 {
		cfg.Block = DefaultBlock
	}
	if cfg.Deadline <= 0 {
		cfg.Deadline = DefaultDeadline
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
	return &Sync{cfg: cfg, store: store, conn: conn, log: log, met: met,
		byField: map[string]uint64{}, byID: map[uint64]string{}, applied: map[uint64]appliedM{},
		deleted: map[uint64]bool{}, pending: map[string]pendingOp{}}, nil
}

// Field is a mitigation's identity across the fleet.
func Field(m mitigation.Mitigation) string {
	return strconv.FormatUint(m.Scope.Key(), 16) + "/" + m.Rule
}

// Run publishes local changes and applies remote ones until ctx ends, then
// returns nil. It first loads the fleet's active set (retrying until Redis
// answers: local changes are published meanwhile).
func (s *Sync) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.publishLoop(ctx) }()
	go func() { defer wg.Done(); s.readLoop(ctx) }()
	wg.Wait()
	return nil
}

func (s *Sync) publishLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.Poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.collect()
		s.flush(ctx)
	}
}

// collect reads the local change feed into the pending set.
func (s *Sync) collect() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Now()
	var added, deleted []mitigation.Mitigation
	var ok bool
	if s.synced {
		added, deleted, s.cursor, ok = s.store.Changes(s.cursor)
	}
	if !ok {
		added, s.cursor = s.store.Snapshot(now)
		deleted = nil
		s.synced = true
	}
	for _, m := range added {
		f := Field(m)
		s.byField[f], s.byID[m.ID] = m.ID, f
		if a, ok := s.applied[m.ID]; ok && a.expires.Equal(m.Expires) && a.action == m.Action {
			continue // a remote change applied here
		}
		delete(s.applied, m.ID)
		b, err := json.Marshal(wire{Node: s.cfg.Node, Rule: m.Rule, Action: m.Action, Scope: m.Scope,
			Created: m.Created, Expires: m.Expires, Origin: string(m.Origin), Published: now})
		if err != nil {
			s.log.Warn("mitigation/fleet: encode", "rule", m.Rule, "err", err)
			continue
		}
		s.queueLocked(f, pendingOp{payload: b, expires: m.Expires, at: now})
	}
	for _, m := range deleted {
		f, ok := s.byID[m.ID]
		if !ok {
			f = Field(m)
		}
		delete(s.byID, m.ID)
		if s.byField[f] == m.ID {
			delete(s.byField, f)
		}
		delete(s.applied, m.ID)
		if s.deleted[m.ID] {
			delete(s.deleted, m.ID)
			continue
		}
		if !m.Expires.After(now) {
			continue // expired: every node expires it by itself
		}
		b, _ := json.Marshal(wire{Node: s.cfg.Node, Rule: m.Rule, Scope: m.Scope, Published: now})
		s.queueLocked(f, pendingOp{payload: b, expires: m.Expires, del: true, at: now})
	}
}

func (s *Sync) queueLocked(f string, op pendingOp) {
	if _, ok := s.pending[f]; !ok {
		if len(s.order) >= MaxPending {
			s.met.dropped.Inc()
			return
		}
		s.order = append(s.order, f)
	}
	s.pending[f] = op
}

// flush publishes the pending changes in order; it stops at the first
// failure and keeps the rest.
func (s *Sync) flush(ctx context.Context) {
	for {
		s.mu.Lock()
		if len(s.order) == 0 {
			s.mu.Unlock()
			return
		}
		f := s.order[0]
		op := s.pending[f]
		s.mu.Unlock()
		cctx, cancel := context.WithTimeout(ctx, s.cfg.Deadline)
		err := s.conn.Publish(cctx, f, op.payload, op.expires, op.del)
		cancel()
		if err != nil {
			s.met.errors.WithLabelValues("publish").Inc()
			s.log.Warn("mitigation/fleet: publish", "err", err)
			return
		}
		s.met.published.WithLabelValues(opName(op.del)).Inc()
		s.mu.Lock()
		if cur, ok := s.pending[f]; ok && cur.at.Equal(op.at) && cur.del == op.del {
			delete(s.pending, f)
		}
		s.order = s.order[1:]
		if _, ok := s.pending[f]; ok {
			s.order = append(s.order, f) // changed again meanwhile
		}
		s.mu.Unlock()
	}
}

func opName(del bool) string {
	if del {
		return "delete"
	}
	return "add"
}

func (s *Sync) readLoop(ctx context.Context) {
	backoff := func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
			return true
		}
	}
	for s.last == "" {
		cctx, cancel := context.WithTimeout(ctx, s.cfg.Deadline)
		last, set, err := s.conn.Active(cctx)
		cancel()
		if err != nil {
			s.met.errors.WithLabelValues("load").Inc()
			s.log.Debug("mitigation/fleet: load active set", "err", err)
			if !backoff() {
				return
			}
			continue
		}
		for f, p := range set {
			s.apply(redis.Change{Field: f, Payload: p}, true)
		}
		s.mu.Lock()
		s.last = last
		s.mu.Unlock()
		s.log.Info("mitigation/fleet: loaded the active set", "mitigations", len(set), "stream_id", last)
	}
	for ctx.Err() == nil {
		ch, err := s.conn.Read(ctx, s.last, s.cfg.Block, 512)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.met.errors.WithLabelValues("read").Inc()
			s.log.Debug("mitigation/fleet: read stream", "err", err)
			if !backoff() {
				return
			}
			continue
		}
		for _, c := range ch {
			s.apply(c, false)
			s.mu.Lock()
			s.last = c.ID
			s.mu.Unlock()
		}
	}
}

// apply applies one remote change to the store, unless this node made it.
func (s *Sync) apply(c redis.Change, load bool) {
	var w wire
	if err := json.Unmarshal(c.Payload, &w); err != nil {
		s.met.errors.WithLabelValues("decode").Inc()
		s.log.Warn("mitigation/fleet: undecodable change, skipped", "field", c.Field, "err", err)
		return
	}
	if w.Node == s.cfg.Node && !load {
		return
	}
	now := s.cfg.Now()
	if !w.Published.IsZero() && !load {
		s.met.delay.Observe(now.Sub(w.Published).Seconds())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Changes made here before this one are recorded first, so that the
	// maps know every local ID.
	s.collectLocked()
	if c.Del {
		id, ok := s.byField[c.Field]
		if !ok {
			return
		}
		if s.store.Delete(id) {
			s.deleted[id] = true
		}
		s.met.received.WithLabelValues("delete").Inc()
		return
	}
	if !w.Expires.After(now) {
		return
	}
	sc, err := mitigation.Canonical(w.Scope)
	if err != nil {
		s.met.errors.WithLabelValues("decode").Inc()
		s.log.Warn("mitigation/fleet: bad scope, skipped", "field", c.Field, "err", err)
		return
	}
	m, held, err := s.store.Add(mitigation.Mitigation{Rule: w.Rule, Action: w.Action, Scope: sc,
		Created: w.Created, Expires: w.Expires, Origin: mitigation.Origin(w.Origin)}, now)
	if err != nil || !held {
		if err != nil {
			s.log.Warn("mitigation/fleet: apply", "field", c.Field, "err", err)
		}
		return
	}
	s.applied[m.ID] = appliedM{expires: m.Expires, action: m.Action}
	f := Field(m)
	s.byField[f], s.byID[m.ID] = m.ID, f
	s.met.received.WithLabelValues("add").Inc()
}

// collectLocked is collect with s.mu held.
func (s *Sync) collectLocked() {
	s.mu.Unlock()
	s.collect()
	s.mu.Lock()
}

// Status is what guardd status shows of propagation.
type Status struct {
	StreamID string // last change read
	Pending  int    // local changes not yet published
	Loaded   bool   // the active set was loaded
}

// Status returns the propagation state now.
func (s *Sync) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Status{StreamID: s.last, Pending: len(s.order), Loaded: s.last != ""}
}

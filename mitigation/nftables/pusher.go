package nftables

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"

	"github.com/guardd/guardd/mitigation"
)

// Source is what the Pusher reads from the mitigation store:
// *mitigation.Store implements it. Snapshot gives the active mitigations and
// the feed cursor of that instant, so no change is missed between the two.
type Source interface {
	Snapshot(now time.Time) ([]mitigation.Mitigation, uint64)
	Changes(since uint64) (added, deleted []mitigation.Mitigation, cursor uint64, ok bool)
}

// ErrClosed is returned by Run after Close.
var ErrClosed = errors.New("nftables: pusher closed")

// Pusher keeps the kernel's sets equal to the pushable mitigations of a
// Source. Its methods other than Close must not be called concurrently: Run
// owns it.
type Pusher struct {
	cfg    Config
	src    Source
	log    *slog.Logger
	met    *metrics
	kern   *kernel
	closed atomic.Bool

	targets map[uint64]target // pushable mitigations by ID
	cursor  uint64            // of the change feed
	have    state             // what the kernel holds, as far as the pusher knows

	warnedBuffer  bool
	reconciled    bool // once: the first reconcile creates and fills, it repairs nothing
	needReconcile bool
	retryAt       time.Time     // earliest retry of a failed reconcile
	backoff       time.Duration // between failed reconciles
}

// New validates cfg and returns a Pusher; it starts nothing and does not
// touch the kernel. A nil reg registers no metrics; a nil log discards.
func New(cfg Config, src Source, reg prometheus.Registerer, log *slog.Logger) (*Pusher, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if src == nil {
		return nil, errors.New("nftables: nil source")
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	met, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("nftables: metrics: %w", err)
	}
	return &Pusher{
		cfg:     cfg,
		src:     src,
		log:     log.With("component", "nftables", "table", cfg.Family+" "+cfg.Table),
		met:     met,
		kern:    newKernel(cfg),
		targets: make(map[uint64]target),
		have:    newState(),
	}, nil
}

// Run reconciles the kernel with the source, then follows the change feed
// every PollInterval and reconciles every ReconcileInterval, until ctx ends;
// then it returns nil. Failures are logged, counted and retried: a daemon
// without CAP_NET_ADMIN keeps serving decisions.
func (p *Pusher) Run(ctx context.Context) error {
	if p.closed.Load() {
		return ErrClosed
	}
	now := p.cfg.Now()
	p.reconcileOrRetry(now)
	nextReconcile := now.Add(p.cfg.ReconcileInterval)
	tick := time.NewTicker(p.cfg.PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		now := p.cfg.Now()
		switch {
		case p.needReconcile && !now.Before(p.retryAt),
			p.cfg.ReconcileInterval > 0 && !now.Before(nextReconcile):
			p.reconcileOrRetry(now)
			nextReconcile = now.Add(p.cfg.ReconcileInterval)
		case !p.needReconcile:
			if err := p.Poll(now); err != nil {
				p.log.Warn("push failed, reconciling", "err", err)
				p.needReconcile = true
			}
		}
	}
}

func (p *Pusher) reconcileOrRetry(now time.Time) {
	if err := p.Reconcile(now); err != nil {
		p.backoff = min(max(2*p.backoff, time.Second), 30*time.Second)
		p.retryAt = now.Add(p.backoff)
		p.needReconcile = true
		p.log.Error("reconcile failed", "err", err, "retry_in_seconds", p.backoff.Seconds())
		return
	}
	p.backoff, p.needReconcile = 0, false
}

// Close marks the pusher closed. It leaves the table and its elements in the
// kernel, so bans stay enforced across a restart and expire on their own. It
// is safe to repeat; Run must have returned.
func (p *Pusher) Close() error {
	p.closed.Store(true)
	return nil
}

// Reconcile makes the kernel equal to the source at now: it recreates the
// table, sets, chains and rules where missing, reads the kernel's elements,
// adds the missing and deletes the extra. Run calls it; tests call it to
// step the pusher.
func (p *Pusher) Reconcile(now time.Time) error {
	repaired, err := p.kern.ensure()
	if err != nil {
		p.met.reconciles.WithLabelValues(resultError).Inc()
		return fmt.Errorf("nftables: reconcile: %w", err)
	}
	if repaired && p.reconciled {
		p.log.Warn("table, set, chain or rule was missing or altered; recreated")
	}
	if p.kern.smallBuffer.Load() && !p.warnedBuffer {
		p.warnedBuffer = true
		p.log.Warn("netlink send buffer could not be raised (SO_SNDBUFFORCE needs CAP_NET_ADMIN); batches over about 200 KiB will fail and be split")
	}
	p.resync(now)
	have, err := p.kern.read(now)
	if err != nil {
		p.met.reconciles.WithLabelValues(resultError).Inc()
		return fmt.Errorf("nftables: reconcile: %w", err)
	}
	want := desired(p.targets, now)
	for i := range have {
		for s, h := range have[i] {
			// Timeouts read back carry the time since they were set: close
			// enough is equal.
			if w, ok := want[i][s]; ok && w.exp.Sub(h.exp).Abs() < 2*time.Second {
				h.exp = w.exp
				have[i][s] = h
			}
		}
	}
	p.have = have
	ops := diff(want, p.have, now)
	if len(ops) > 0 {
		var adds, dels int
		for _, o := range ops {
			switch o.kind {
			case opAdd:
				adds++
			case opDelete:
				dels++
			}
		}
		lvl := slog.LevelWarn
		if !p.reconciled {
			lvl = slog.LevelInfo
		}
		p.log.Log(context.Background(), lvl, "kernel sets differ from the store; pushing", "missing", adds, "extra", dels, "changed", len(ops)-adds-dels)
		repaired = true
	}
	if err := p.apply(ops, now); err != nil {
		p.met.reconciles.WithLabelValues(resultError).Inc()
		return fmt.Errorf("nftables: reconcile: %w", err)
	}
	first := !p.reconciled
	p.reconciled = true
	if repaired && !first {
		p.met.reconciles.WithLabelValues(resultRepaired).Inc()
	} else {
		p.met.reconciles.WithLabelValues(resultOK).Inc()
	}
	return nil
}

// resync rebuilds the targets from a snapshot of the source.
func (p *Pusher) resync(now time.Time) {
	ms, cursor := p.src.Snapshot(now)
	clear(p.targets)
	for _, m := range ms {
		if t, ok := classify(m, p.cfg); ok {
			p.targets[m.ID] = t
		}
	}
	p.cursor = cursor
}

// Poll reads the change feed and pushes what changed. Run calls it every
// PollInterval; tests call it to step the pusher.
func (p *Pusher) Poll(now time.Time) error {
	added, deleted, cursor, ok := p.src.Changes(p.cursor)
	dirty := false
	if !ok {
		p.resync(now)
		dirty = true
	} else {
		p.cursor = cursor
		for _, m := range added {
			t, push := classify(m, p.cfg)
			_, held := p.targets[m.ID]
			switch {
			case push:
				p.targets[m.ID] = t
				dirty = true
			case held: // no longer pushable (its action changed)
				delete(p.targets, m.ID)
				dirty = true
			}
		}
		for _, m := range deleted {
			if _, held := p.targets[m.ID]; held {
				delete(p.targets, m.ID)
				dirty = true
			}
		}
	}
	if !dirty {
		return nil
	}
	if err := p.apply(diff(desired(p.targets, now), p.have, now), now); err != nil {
		return fmt.Errorf("nftables: push: %w", err)
	}
	return nil
}

// diff returns the ops that turn have into want: deletions first (so a new
// range never overlaps an old one in the kernel), then replacements (same
// span, new timeout) and additions. Entries of have expired at now are
// dropped: the kernel has expired them.
func diff(want, have state, now time.Time) []op {
	var dels, rest []op
	for i := range numSets {
		for s, h := range have[i] {
			if !h.exp.After(now) {
				delete(have[i], s)
				continue
			}
			w, ok := want[i][s]
			switch {
			case !ok:
				dels = append(dels, op{kind: opDelete, set: i, s: s, e: h})
			case !w.exp.Equal(h.exp) || h.noEnd:
				rest = append(rest, op{kind: opReplace, set: i, s: s, e: w, old: h})
			}
		}
		for s, w := range want[i] {
			if _, ok := have[i][s]; !ok {
				rest = append(rest, op{kind: opAdd, set: i, s: s, e: w})
			}
		}
	}
	return append(dels, rest...)
}

// apply sends ops in batches of at most BatchElements elements and records
// the result in p.have. A refused batch is split in halves down to single
// ops: the good ones are applied, the bad ones logged and counted, and kept
// in p.have so that they are retried at the next reconcile, not every poll.
// It returns an error when the kernel cannot be written at all (permission,
// table or set missing).
func (p *Pusher) apply(ops []op, now time.Time) error {
	if len(ops) == 0 {
		p.setGauges()
		return nil
	}
	start := time.Now()
	defer func() {
		p.met.duration.Observe(time.Since(start).Seconds())
		p.setGauges()
	}()
	for len(ops) > 0 {
		n, size := 0, 0
		for n < len(ops) && (n == 0 || size+ops[n].elements() <= p.cfg.BatchElements) {
			size += ops[n].elements()
			n++
		}
		if err := p.applyBatch(ops[:n], now); err != nil {
			p.met.pushErrors.Inc()
			return err
		}
		ops = ops[n:]
	}
	return nil
}

// applyBatch sends ops as one transaction, splitting it when refused.
func (p *Pusher) applyBatch(ops []op, now time.Time) error {
	err := p.kern.send(ops, now)
	if err == nil {
		p.record(ops)
		return nil
	}
	if fatal(err) {
		return err
	}
	if len(ops) > 1 {
		h := len(ops) / 2
		if err := p.applyBatch(ops[:h], now); err != nil {
			return err
		}
		return p.applyBatch(ops[h:], now)
	}
	o := ops[0]
	switch {
	case o.kind == opDelete && errors.Is(err, unix.ENOENT):
		p.record(ops) // already gone: expired, or deleted behind our back
		return nil
	case o.kind == opReplace:
		// The old element may have expired or been altered: delete it (or
		// find it gone), then add the new one alone.
		del := op{kind: opDelete, set: o.set, s: o.s, e: o.old}
		if err := p.applyBatch([]op{del}, now); err != nil {
			return err
		}
		return p.applyBatch([]op{{kind: opAdd, set: o.set, s: o.s, e: o.e}}, now)
	case o.kind == opAdd && errors.Is(err, unix.ENOENT):
		return fmt.Errorf("set %s: %w: %w", p.kern.sets[o.set].Name, errNoStructure, err)
	}
	p.met.pushErrors.Inc()
	p.log.Warn("kernel refused set element", "set", p.kern.sets[o.set].Name, "op", o.kind.String(), "element", o.s.format(o.set), "err", err)
	if o.kind == opAdd {
		p.have[o.set][o.s] = o.e // retried at the next reconcile, not every poll
	} else {
		delete(p.have[o.set], o.s) // a reconcile will find it if it is there
	}
	return nil
}

// record applies successful ops to p.have.
func (p *Pusher) record(ops []op) {
	for _, o := range ops {
		if o.kind == opDelete {
			delete(p.have[o.set], o.s)
		} else {
			p.have[o.set][o.s] = o.e
		}
	}
}

func (p *Pusher) setGauges() {
	for i := range numSets {
		p.met.elements.WithLabelValues(i.family(), i.kind()).Set(float64(len(p.have[i])))
	}
}

func (k opKind) String() string {
	switch k {
	case opAdd:
		return "add"
	case opDelete:
		return "delete"
	}
	return "replace"
}

// format writes an address, a prefix when the range is one, or lo-hi.
func (s span) format(k setKind) string {
	if !k.interval() {
		return s.lo.String()
	}
	last := s.hi.Prev()
	if !s.hi.IsValid() {
		last = lastAddr(netip.PrefixFrom(s.lo, 0))
	}
	for bits := 0; bits <= s.lo.BitLen(); bits++ {
		if p := netip.PrefixFrom(s.lo, bits); p.Masked().Addr() == s.lo && lastAddr(p) == last {
			return p.String()
		}
	}
	return s.lo.String() + "-" + last.String()
}

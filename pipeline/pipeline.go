package pipeline

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/config"
	"github.com/guardd/guardd/counting"
	"github.com/guardd/guardd/ingest/nginxlog"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/rules"
	"github.com/guardd/guardd/rules/engine"
	"github.com/guardd/guardd/scoring"
)

// Pipeline is what one configuration builds: rules, engine, log format and
// enricher. It is reference-counted: Build returns it with one reference,
// held by whoever built it (usually a Holder), and the enricher is closed
// when the last reference is released.
type Pipeline struct {
	rules  *rules.Set
	engine *engine.Engine
	format *nginxlog.Format // nil with JSON logs
	json   bool
	// cookies: the log format carries cookies, so a session that sends
	// none is known to send none (session.cookie_never).
	cookies bool
	// sessions: a rule may read session.*, and the source can tell a
	// browser's session (its log format carries cookies, or is JSON); the
	// run then keeps the session table, at a cost (Config.Sessions).
	sessions bool
	enricher *characteristics.Enricher
	actions  []mitigation.Action // per rule index
	scoring  Scoring
	refs     atomic.Int64
}

// BuildOptions are what Build needs besides the configuration.
type BuildOptions struct {
	Logger     *slog.Logger
	Registerer prometheus.Registerer // for the rules' metrics; nil: not exported
	// NewCounter, when set, makes the counter of each detection rule with
	// one limit (fleet mode: counting/redis); nil, or a rule with windows
	// or distinct, keeps the engine's local table.
	NewCounter func(r *rules.Rule, lim counting.Limit) (engine.Counter, error)
	// NewDistinct, when set, makes the counter of each detection rule
	// that counts distinct values out of its local tables, one per window
	// (fleet mode: counting/redis); nil keeps the local tables alone.
	NewDistinct func(r *rules.Rule, local []*counting.Distinct) (engine.DistinctCounter, error)
	// Scorer, when set, holds the anomaly scores to add to, kept across
	// reloads; the configuration's thresholds apply to it. nil: new scores.
	Scorer *scoring.Scorer
}

// Build loads the rules and opens the enricher of cfg. Nothing of it is used
// until it is handed to Run or a Holder.
func Build(cfg *config.Config, opts BuildOptions) (*Pipeline, error) {
	ropts := rules.Options{Logger: opts.Logger, EvalTimeout: cfg.Rules.EvalTimeout, Registerer: opts.Registerer, LoginPaths: cfg.Rules.LoginPaths, Paranoia: cfg.Rules.Paranoia}
	var sets []*rules.Set
	if !cfg.Rules.DisableBuiltin {
		s, err := rules.Builtin(ropts)
		if err != nil {
			return nil, err
		}
		sets = append(sets, s)
	}
	for _, d := range cfg.Rules.Dirs {
		s, err := rules.LoadDir(d, ropts)
		if err != nil {
			return nil, err
		}
		sets = append(sets, s)
	}
	set, err := rules.Merge(sets...)
	if err != nil {
		return nil, err
	}
	p := &Pipeline{rules: set, json: cfg.Log.JSON}
	for _, r := range set.Rules() {
		p.actions = append(p.actions, r.Action)
		p.sessions = p.sessions || r.Session
	}
	if p.engine, err = engine.New(engine.Config{Rules: set, MaxKeys: cfg.Counting.MaxKeys}); err != nil {
		return nil, err
	}
	if opts.NewCounter != nil {
		for i, r := range set.Rules() {
			if r.Action == mitigation.ActionThrottle || r.Distinct != nil {
				continue
			}
			c, err := opts.NewCounter(r, counting.Limit{Algorithm: r.Algorithm, Period: r.Period, Requests: r.Requests, Burst: r.Burst})
			if err != nil {
				return nil, fmt.Errorf("rule %s: %w", r.Name, err)
			}
			p.engine.SetCounter(i, c)
		}
	}
	if opts.NewDistinct != nil {
		for i, r := range set.Rules() {
			local := p.engine.DistinctTables(i)
			if len(local) == 0 {
				continue
			}
			c, err := opts.NewDistinct(r, local)
			if err != nil {
				return nil, fmt.Errorf("rule %s: %w", r.Name, err)
			}
			p.engine.SetDistinct(i, c)
		}
	}
	if !cfg.Log.JSON {
		f := cfg.Log.Format
		if f == "" {
			f = "combined"
		}
		if p.format, err = nginxlog.Compile(f); err != nil {
			return nil, fmt.Errorf("log.format: %w", err)
		}
		p.cookies = slices.ContainsFunc(p.format.Variables(), func(v string) bool {
			return v == "http_cookie" || strings.HasPrefix(v, "cookie_")
		})
		// Without cookies a session cannot tell a browser from a script
		// (every client would seem to throw the site's cookie away), and
		// keeping it costs a second pass over each batch: none is kept.
		p.sessions = p.sessions && p.cookies
		if cfg.Decision.Count && !slices.Contains(p.format.Variables(), "request_id") {
			return nil, errors.New("decision.count: log.format has no $request_id; without it a request counted at decision time would be counted again from its log line")
		}
	}
	sc, err := cfg.Scoring.Scorer(cfg.Characteristics.PrefixV4, cfg.Characteristics.PrefixV6)
	if err != nil {
		return nil, fmt.Errorf("scoring: %w", err)
	}
	if opts.Scorer != nil {
		sc = opts.Scorer.With(sc)
	}
	p.scoring = Scoring{Scorer: sc, Timeout: cfg.Scoring.Timeout()}
	if p.enricher, err = characteristics.NewEnricher(cfg.Enrich()); err != nil {
		return nil, err
	}
	p.refs.Store(1)
	return p, nil
}

// Rules returns the rule set.
func (p *Pipeline) Rules() *rules.Set { return p.rules }

// Scorer returns the anomaly scores the pipeline adds to.
func (p *Pipeline) Scorer() *scoring.Scorer { return p.scoring.Scorer }

// Engine returns the rule engine.
func (p *Pipeline) Engine() *engine.Engine { return p.engine }

// Enrich completes ev with p's enricher; the caller holds a reference.
func (p *Pipeline) Enrich(ev *characteristics.Event) { p.enricher.Enrich(ev) }

// Release drops a reference; the last one closes the enricher.
func (p *Pipeline) Release() {
	if n := p.refs.Add(-1); n == 0 {
		p.enricher.Close()
	} else if n < 0 {
		panic("pipeline: released more often than acquired")
	}
}

// tryAcquire takes a reference unless the last one is gone.
func (p *Pipeline) tryAcquire() bool {
	for {
		n := p.refs.Load()
		if n <= 0 {
			return false
		}
		if p.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Holder holds the current Pipeline across reloads. Its methods are safe for
// concurrent use.
type Holder struct {
	cur atomic.Pointer[Pipeline]
}

// NewHolder holds p, taking over the reference Build returned.
func NewHolder(p *Pipeline) *Holder {
	h := &Holder{}
	h.cur.Store(p)
	return h
}

// Acquire returns the current Pipeline with a reference the caller must
// Release. A Pipeline swapped out meanwhile stays usable until then.
func (h *Holder) Acquire() *Pipeline {
	for {
		p := h.cur.Load()
		if p == nil {
			return nil
		}
		if p.tryAcquire() {
			return p
		}
		// Swapped and released between the load and the increment: the
		// holder has a new one.
	}
}

// Load returns the current Pipeline without a reference, for reading
// what outlives it (rule names, counter sizes).
func (h *Holder) Load() *Pipeline { return h.cur.Load() }

// Swap makes p current (taking over its reference) and releases the
// holder's reference to the previous one, which is closed once nothing uses
// it any more.
func (h *Holder) Swap(p *Pipeline) {
	if old := h.cur.Swap(p); old != nil {
		old.Release()
	}
}

// Close releases the current Pipeline.
func (h *Holder) Close() {
	if old := h.cur.Swap(nil); old != nil {
		old.Release()
	}
}

// Enrich completes ev with the current enricher: the decision API's
// enrichment, so a reload reaches it.
func (h *Holder) Enrich(ev *characteristics.Event) {
	p := h.Acquire()
	if p == nil {
		return
	}
	p.enricher.Enrich(ev)
	p.Release()
}

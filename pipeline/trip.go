package pipeline

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/rules/engine"
)

// tripper hands trips to the store: the one tripping path of Run's
// sequencer and of RequestCounter. It is safe for concurrent use
// (RequestCounter trips on the decision API's event loops).
type tripper struct {
	store   Store
	held    heldRecord
	metrics *Metrics
	log     *slog.Logger
	lastAdd atomic.Int64 // Unix nanoseconds of the last failed Add logged
}

// heldRecord is what a tripper knows of the mitigations already made: the
// store, in the live daemon; a replay's Report, which holds what its store
// holds and nothing else deletes from that store.
type heldRecord interface {
	// held reports whether tr's rule holds a mitigation with action on tr's
	// scope, in force at now, that tr would not extend by more than slack;
	// if so the trip is recorded as one more of it.
	held(tr *engine.Trip, action mitigation.Action, slack time.Duration, now time.Time) bool
	// added records the mitigation m that tr made or extended in the store.
	added(tr *engine.Trip, m mitigation.Mitigation, now time.Time)
	// scored records the mitigation m an anomaly score made or extended.
	scored(m mitigation.Mitigation, now time.Time)
}

func newTripper(store Store, rep *Report, metrics *Metrics, log *slog.Logger) *tripper {
	if metrics == nil {
		metrics = NewMetrics(nil)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &tripper{store: store, metrics: metrics, log: log}
	if rep != nil {
		t.held = rep
	} else {
		t.held = &storeRecord{store: store, log: log}
	}
	return t
}

// trip hands a rule going over its limit to the store, unless the rule
// already holds a mitigation on the scope that this trip would not extend by
// a tenth of its timeout.
func (t *tripper) trip(p *Pipeline, tr *engine.Trip, now time.Time) {
	if !tr.Expires.After(now) {
		return // an old line from a backlog: the mitigation would already be over
	}
	if tr.Rule.AnomalyScore > 0 {
		t.score(p.scoring, tr, now)
	}
	action := p.actions[tr.Index]
	if t.held.held(tr, action, tr.Rule.MitigationTimeout/10, now) {
		return
	}
	sc := mitigation.Scope(tr.Scope()) // a fresh slice: the store may keep it
	m, ok, err := t.store.Add(mitigation.Mitigation{Rule: tr.Rule.Name, Action: action, Scope: sc, Expires: tr.Expires, Origin: mitigation.OriginRule}, now)
	if err != nil {
		t.addFailed(tr.Rule.Name, err, now)
		return
	}
	if !ok {
		return // allowlisted
	}
	t.metrics.trip(tr.Rule.Name, action)
	t.held.added(tr, m, now)
}

// addFailed logs a failed Add, once per 10 seconds.
func (t *tripper) addFailed(rule string, err error, now time.Time) {
	ns, last := now.UnixNano(), t.lastAdd.Load()
	if ns-last > int64(10*time.Second) || ns < last {
		t.lastAdd.Store(ns)
		t.log.Warn("mitigation not added", "rule", rule, "err", err)
	}
}

// storeRecord is the live daemon's heldRecord: the store itself, and a log
// line per new mitigation.
type storeRecord struct {
	store Store
	log   *slog.Logger
}

func (r *storeRecord) held(tr *engine.Trip, action mitigation.Action, slack time.Duration, now time.Time) bool {
	held, ok := r.store.LookupRule(scopeKey(tr), tr.Rule.Name, now)
	return ok && held.Action == action && held.Expires.Add(slack).After(tr.Expires)
}

func (r *storeRecord) added(_ *engine.Trip, m mitigation.Mitigation, now time.Time) { r.scored(m, now) }

func (r *storeRecord) scored(m mitigation.Mitigation, now time.Time) {
	if !m.Created.Before(now) {
		r.log.Info("mitigation", "id", m.ID, "rule", m.Rule, "action", m.Action.String(), "scope", m.Scope.String(), "expires", m.Expires)
	}
}

// scopeKey is the store's key of a trip's scope, hashed from the key bytes
// without building the scope. The enricher's values are already canonical;
// should one not be, the lookup misses and Add, which canonicalises, merges.
func scopeKey(tr *engine.Trip) uint64 {
	var h mitigation.Hasher
	h.Reset()
	key := tr.KeyBytes
	for _, c := range tr.Rule.Characteristics {
		var v []byte
		v, key = engine.NextKeyValue(key)
		h.Write(c.String(), v)
	}
	return h.Sum64()
}

package engine

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/counting"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/rules"
)

// Counter is what the engine needs of a counter table. counting.Table is one;
// a fleet-wide tier can be another.
type Counter interface {
	Add(key uint64, n float64, now int64) counting.Result
}

// DistinctCounter is what the engine needs of a counter of distinct values
// (a rule with distinct: in its metadata).
type DistinctCounter interface {
	AddDistinct(key, value uint64, now int64) counting.Result
}

// Config configures an Engine.
type Config struct {
	// Rules is the rule set; required.
	Rules *rules.Set
	// MaxKeys caps each rule's counter table; 0 means counting's default.
	MaxKeys int
	// OnTrip, if set, is called (under no lock) when a rule trips on a key that
	// has no active mitigation, and when an expired one trips again.
	OnTrip func(Trip)
	// Allowed, if set, is asked once per rule and key when the rule first
	// trips; an allowed scope is never mitigated (the allowlist).
	Allowed func(scope []characteristics.Field) bool
}

// Trip is a rule going over its limit for one key.
type Trip struct {
	Rule    *rules.Rule
	Index   int    // the rule's index in the set
	Key     uint64 // hash of the characteristic values
	Scope   []characteristics.Field
	Time    time.Time
	Expires time.Time
	Result  counting.Result
	// Extended is set when the trip only pushes out the expiry of an active
	// mitigation (reported when it moves by a tenth of the timeout or more).
	Extended bool
}

// Engine counts events per rule and key and trips rules.
type Engine struct {
	set      *rules.Set
	rules    []*rules.Rule
	counters []Counter
	onTrip   func(Trip)
	allowed  func([]characteristics.Field) bool

	// distinct[i] is rule i's counter when the rule counts distinct values.
	distinct []DistinctCounter

	mu     sync.Mutex
	active []map[uint64]*Active // per rule: key -> mitigation state
}

// Active is the engine's record of a mitigation for one rule and key.
type Active struct {
	Scope     []characteristics.Field
	FirstSeen time.Time // time of the first trip
	LastSeen  time.Time // time of the last request it applied to
	Expires   time.Time
	Count     int64   // requests it applied to, the tripping one included
	Trips     int64   // times the rule tripped for this key
	Counted   float64 // the counter's estimate when it first tripped
	// Allowlisted marks a scope that tripped but is never mitigated.
	Allowlisted bool
	reported    time.Time // the expiry last handed to OnTrip
}

// New builds an engine with one counter table per rule.
func New(cfg Config) (*Engine, error) {
	if cfg.Rules == nil {
		return nil, fmt.Errorf("engine: no rule set")
	}
	rs := cfg.Rules.Rules()
	e := &Engine{set: cfg.Rules, rules: rs, onTrip: cfg.OnTrip, allowed: cfg.Allowed,
		counters: make([]Counter, len(rs)), distinct: make([]DistinctCounter, len(rs)), active: make([]map[uint64]*Active, len(rs))}
	for i, r := range rs {
		alg, err := counting.ParseAlgorithm(r.Algorithm)
		if err != nil {
			return nil, fmt.Errorf("engine: rule %s: %w", r.Name, err)
		}
		e.active[i] = make(map[uint64]*Active)
		if len(r.Windows) > 1 || r.Distinct != nil {
			ws := make([]counting.Window, len(r.Windows))
			for j, w := range r.Windows {
				ws[j] = counting.Window{Period: w.Period, Requests: w.Requests}
			}
			w, err := counting.NewWindows(alg, ws, r.Distinct != nil, cfg.MaxKeys)
			if err != nil {
				return nil, fmt.Errorf("engine: rule %s: %w", r.Name, err)
			}
			e.counters[i] = w
			if r.Distinct != nil {
				e.distinct[i] = w
			}
			continue
		}
		t, err := counting.NewTable(counting.Config{
			Limit:   counting.Limit{Algorithm: alg, Period: r.Period, Requests: r.Requests},
			MaxKeys: cfg.MaxKeys,
		})
		if err != nil {
			return nil, fmt.Errorf("engine: rule %s: %w", r.Name, err)
		}
		e.counters[i] = t
	}
	return e, nil
}

// Rules returns the rules, indexed as in Match.Rule.
func (e *Engine) Rules() []*rules.Rule { return e.rules }

// SetCounter replaces rule i's counter, for a fleet-wide tier.
func (e *Engine) SetCounter(i int, c Counter) { e.counters[i] = c }

// Match is one rule's verdict on one event, prepared for Apply.
type Match struct {
	Rule     int32
	Count    bool    // the counting expression matched
	Mitigate bool    // the mitigation expression matched
	N        float64 // what to add: 1, or the rule's score
	Value    uint64  // for a distinct rule, the hash of the distinct value
	Key      uint64
	KeyOff   uint32 // the key's characteristic values in Matches.Keys
	KeyLen   uint32
}

// Matches holds the matches of a run of events. Reuse it: Reset keeps its
// memory. Not safe for concurrent use.
type Matches struct {
	Items []Match
	Keys  []byte // characteristic values, each ended by 0xff
	eval  rules.Matches
}

// Reset empties m.
func (m *Matches) Reset() { m.Items, m.Keys = m.Items[:0], m.Keys[:0] }

// Prepare evaluates every rule on ev and appends the matches to m. It returns
// how many it appended. It reads no engine state and allocates nothing once m
// has grown.
func (e *Engine) Prepare(ev *characteristics.Event, m *Matches) int {
	e.set.Eval(ev, &m.eval)
	n0 := len(m.Items)
	// Rules keyed alike (most on ip.src) share one formatted key and hash
	// per event.
	var prev [4]struct {
		chars    []characteristics.Characteristic
		off, len uint32
		hash     uint64
	}
	nprev := 0
	for i, r := range e.rules {
		if r.Action == mitigation.ActionThrottle {
			continue // counted and decided per request by the decision API
		}
		cnt, mit := m.eval.Count(i), m.eval.Mitigate(i)
		if !cnt && !mit {
			continue
		}
		off := len(m.Keys)
		ok := true
		shared := -1
		for j := range nprev {
			if slices.Equal(prev[j].chars, r.Characteristics) {
				shared = j
				break
			}
		}
		for _, c := range r.Characteristics {
			if shared >= 0 {
				break
			}
			if !c.Present(ev) {
				ok = false
				break
			}
			m.Keys = c.AppendValue(m.Keys, ev)
			m.Keys = append(m.Keys, 0xff)
		}
		if !ok { // an event without the characteristic cannot be keyed
			m.Keys = m.Keys[:off]
			continue
		}
		var value uint64
		if d := r.Distinct; d != nil && cnt {
			// Without the value there is nothing to count; the key may
			// still be mitigated.
			if d.Present(ev) {
				end := len(m.Keys)
				m.Keys = d.AppendValue(m.Keys, ev)
				value = counting.Hash(m.Keys[end:])
				m.Keys = m.Keys[:end]
			} else {
				cnt = false
				if !mit {
					m.Keys = m.Keys[:off]
					continue
				}
			}
		}
		n := 1.0
		if r.Score != nil {
			if v, ok := r.Score.Num(ev); ok {
				n = v
			} else {
				n = 0
			}
		}
		var keyOff, keyLen uint32
		var hash uint64
		if shared >= 0 {
			keyOff, keyLen, hash = prev[shared].off, prev[shared].len, prev[shared].hash
		} else {
			key := m.Keys[off:]
			keyOff, keyLen, hash = uint32(off), uint32(len(key)), counting.Hash(key)
			if nprev < len(prev) {
				prev[nprev].chars, prev[nprev].off, prev[nprev].len, prev[nprev].hash = r.Characteristics, keyOff, keyLen, hash
				nprev++
			}
		}
		m.Items = append(m.Items, Match{
			Rule: int32(i), Count: cnt, Mitigate: mit, N: n, Value: value,
			Key: hash, KeyOff: keyOff, KeyLen: keyLen,
		})
	}
	return len(m.Items) - n0
}

// Apply counts the matches of one event, which happened at t, trips rules and
// updates their mitigations. keys is the Matches.Keys the matches point into.
// It reports whether any active mitigation applied to the event.
func (e *Engine) Apply(t time.Time, items []Match, keys []byte) (mitigated bool) {
	now := t.UnixNano()
	var trips []Trip
	for _, it := range items {
		r := e.rules[it.Rule]
		if it.Mitigate {
			e.mu.Lock()
			if a, ok := e.active[it.Rule][it.Key]; ok && !a.Allowlisted && t.Before(a.Expires) {
				a.Count++
				a.LastSeen = t
				mitigated = true
			}
			e.mu.Unlock()
		}
		if !it.Count || it.N == 0 {
			continue
		}
		var res counting.Result
		if d := e.distinct[it.Rule]; d != nil {
			res = d.AddDistinct(it.Key, it.Value, now)
		} else {
			res = e.counters[it.Rule].Add(it.Key, it.N, now)
		}
		if !res.Exceeded {
			continue
		}
		exp := t.Add(r.MitigationTimeout)
		e.mu.Lock()
		a, ok := e.active[it.Rule][it.Key]
		fresh := !ok || !t.Before(a.Expires)
		if !ok {
			a = &Active{Scope: scope(r, keys[it.KeyOff:it.KeyOff+it.KeyLen]), FirstSeen: t, Counted: res.Count}
			a.Allowlisted = e.allowed != nil && e.allowed(a.Scope)
			e.active[it.Rule][it.Key] = a
		}
		if a.Allowlisted {
			e.mu.Unlock()
			continue
		}
		a.Trips++
		if fresh {
			// The tripping request is the first the mitigation applies to,
			// when the mitigation expression covers it.
			if it.Mitigate {
				a.Count++
				a.LastSeen = t
				mitigated = true
			}
		}
		if exp.After(a.Expires) {
			a.Expires = exp
		}
		report := e.onTrip != nil && (fresh || a.Expires.Sub(a.reported) >= r.MitigationTimeout/10)
		var tr Trip
		if report {
			a.reported = a.Expires
			tr = Trip{Rule: r, Index: int(it.Rule), Key: it.Key, Scope: a.Scope, Time: t, Expires: a.Expires, Result: res, Extended: !fresh}
		}
		e.mu.Unlock()
		if report {
			trips = append(trips, tr)
		}
	}
	for _, tr := range trips {
		e.onTrip(tr)
	}
	return mitigated
}

// Expire forgets mitigations that ended before t, and counters idle for
// two periods, so a long-running engine stays bounded. It returns how many
// mitigations it forgot. Replays do not call it: they report every
// mitigation at the end.
func (e *Engine) Expire(t time.Time) int {
	e.mu.Lock()
	n := 0
	for _, m := range e.active {
		for k, a := range m {
			if a.Expires.Before(t) {
				delete(m, k)
				n++
			}
		}
	}
	e.mu.Unlock()
	for _, c := range e.counters {
		if s, ok := c.(interface{ Sweep(int64) int }); ok {
			s.Sweep(t.UnixNano())
		}
	}
	return n
}

// Keys returns how many keys the rules' counters track, and how many they
// evicted to stay under their caps.
func (e *Engine) Keys() (keys int, evictions uint64) {
	for _, c := range e.counters {
		if t, ok := c.(interface {
			Len() int
			Evictions() uint64
		}); ok {
			keys += t.Len()
			evictions += t.Evictions()
		}
	}
	return keys, evictions
}

// scope turns key bytes back into the rule's characteristic values.
func scope(r *rules.Rule, key []byte) []characteristics.Field {
	out := make([]characteristics.Field, 0, len(r.Characteristics))
	for _, c := range r.Characteristics {
		i := 0
		for i < len(key) && key[i] != 0xff {
			i++
		}
		out = append(out, characteristics.Field{Name: c.String(), Value: string(key[:i])})
		if i < len(key) {
			i++
		}
		key = key[i:]
	}
	return out
}

// Mitigation is a snapshot of one rule's mitigation for one key.
type Mitigation struct {
	Rule *rules.Rule
	Active
}

// Mitigations returns every mitigation the engine has created, expired ones
// included, ordered by first trip.
func (e *Engine) Mitigations() []Mitigation {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Mitigation
	for i, m := range e.active {
		for _, a := range m {
			if a.Allowlisted {
				continue
			}
			out = append(out, Mitigation{Rule: e.rules[i], Active: *a})
		}
	}
	sortMitigations(out)
	return out
}

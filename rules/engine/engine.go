package engine

import (
	"fmt"
	"math/bits"
	"slices"
	"time"

	"github.com/guardd/guardd/action"
	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/counting"
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
	// CountOnly makes Prepare leave out what the event's mitigation
	// expressions matched (Matches.Mitigable), which Apply never reads:
	// for a caller that never reads it (only a replay's report judges
	// requests by it; the daemon's decision API evaluates mitigation
	// expressions itself). Matches.CountOnly does the same for the events
	// of one Matches.
	CountOnly bool
}

// Trip is a rule over its limit for one key, on one event. The engine keeps
// no record of it: the caller's mitigation table decides whether it makes a
// new mitigation, extends one, or is already covered.
type Trip struct {
	Rule    *rules.Rule
	Index   int    // the rule's index in the set
	Key     uint64 // hash of the characteristic values
	Time    time.Time
	Expires time.Time // Time plus the rule's mitigation timeout
	Result  counting.Result
	// Mitigate is set when the rule's mitigation expression matched the
	// tripping event, so the mitigation applies to it.
	Mitigate bool
	// KeyBytes are the characteristic values, each ended by 0xff; they
	// alias the Matches the trip came from.
	KeyBytes []byte
}

// Scope turns the trip's key back into the rule's characteristic values.
func (t *Trip) Scope() []characteristics.Field { return scope(t.Rule, t.KeyBytes) }

// Engine counts events per rule and key and reports trips. It holds no
// mitigations: that is the mitigation store's job.
type Engine struct {
	set      *rules.Set
	rules    []*rules.Rule
	counters []Counter

	// distinct[i] is rule i's counter when the rule counts distinct values.
	distinct []DistinctCounter
	// regular[i] is rule i's timing gate (regularity: metadata); nil
	// when no rule has one (regularity.go).
	regular []*counting.Regularity

	// How Prepare keys each rule, numbered once here so that nothing is
	// compared per event: chars are the characteristics that keys and
	// distinct values read, each once; groups the distinct keys, as
	// indexes into chars; plan[i] rule i's group and distinct value.
	chars  []characteristics.Characteristic
	groups [][]int32
	plan   []rulePlan
	// words is how many uint64 hold a bit per rule.
	words int
	// keyed has a bit per rule Prepare keys (all but throttle rules);
	// members, words per key group, a bit per rule keyed on the group.
	keyed   []uint64
	members []uint64

	onCount func(Counted) // see SetOnCount

	countOnly bool // see Config.CountOnly
}

// rulePlan is how Prepare keys one rule.
type rulePlan struct {
	group    int32                           // index in Engine.groups; -1: not prepared (throttle)
	distinct int32                           // index in Engine.chars of the distinct value; -1: none
	score    *characteristics.Characteristic // the rule's Score, kept here to spare a load of the rule per match
}

// planKeys numbers the characteristics and keys of e's rules.
func (e *Engine) planKeys() {
	char := func(c characteristics.Characteristic) int32 {
		if i := slices.Index(e.chars, c); i >= 0 {
			return int32(i)
		}
		e.chars = append(e.chars, c)
		return int32(len(e.chars) - 1)
	}
	e.plan = make([]rulePlan, len(e.rules))
	e.words = (len(e.rules) + 63) / 64
	e.keyed = make([]uint64, e.words)
	for i, r := range e.rules {
		e.plan[i] = rulePlan{group: -1, distinct: -1, score: r.Score}
		if r.Action == action.Throttle {
			continue
		}
		key := make([]int32, len(r.Characteristics))
		for j, c := range r.Characteristics {
			key[j] = char(c)
		}
		g := slices.IndexFunc(e.groups, func(k []int32) bool { return slices.Equal(k, key) })
		if g < 0 {
			e.groups = append(e.groups, key)
			g = len(e.groups) - 1
		}
		e.plan[i].group = int32(g)
		e.keyed[i>>6] |= 1 << (uint(i) & 63)
		if r.Distinct != nil {
			e.plan[i].distinct = char(*r.Distinct)
		}
	}
	e.members = make([]uint64, len(e.groups)*e.words)
	for i, p := range e.plan {
		if p.group >= 0 {
			e.members[int(p.group)*e.words+i>>6] |= 1 << (uint(i) & 63)
		}
	}
}

// New builds an engine with one counter table per rule.
func New(cfg Config) (*Engine, error) {
	if cfg.Rules == nil {
		return nil, fmt.Errorf("engine: no rule set")
	}
	rs := cfg.Rules.Rules()
	e := &Engine{set: cfg.Rules, rules: rs, counters: make([]Counter, len(rs)), distinct: make([]DistinctCounter, len(rs)), countOnly: cfg.CountOnly}
	for i, r := range rs {
		alg := r.Algorithm
		if r.Action == action.Throttle {
			continue // no counter here: the decision API counts it (Prepare skips it)
		}
		if err := e.newRegular(i, r, cfg.MaxKeys); err != nil {
			return nil, err
		}
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
			if d := w.Distinct(); d != nil {
				e.distinct[i] = d // one window: its table, without the loop over windows
			} else if r.Distinct != nil {
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
	e.planKeys()
	return e, nil
}

// Rules returns the rules, indexed as in Match.Rule.
func (e *Engine) Rules() []*rules.Rule { return e.rules }

// SetCounter replaces rule i's counter, for a fleet-wide tier.
func (e *Engine) SetCounter(i int, c Counter) { e.counters[i] = c }

// DistinctTables returns rule i's own tables of distinct values, one per
// window, when the rule counts distinct values, and nil otherwise: what a
// fleet-wide tier wraps (SetDistinct).
func (e *Engine) DistinctTables(i int) []*counting.Distinct {
	switch d := e.distinct[i].(type) {
	case *counting.Distinct:
		return []*counting.Distinct{d}
	case *counting.Windows:
		return d.DistinctTables()
	}
	return nil
}

// SetDistinct replaces rule i's distinct counter, for a fleet-wide tier;
// the rule's own table still answers Peek, Expire and Keys.
func (e *Engine) SetDistinct(i int, d DistinctCounter) { e.distinct[i] = d }

// Counted is one counting step, as SetOnCount reports it.
type Counted struct {
	Rule   int    // index in Rules
	Key    uint64 // hash of Values
	Values []byte // the key's characteristic values, each ended by 0xff; valid during the call only
	Time   time.Time
	Result counting.Result // Exceeded: the rule tripped (or stays over) on this key
}

// SetOnCount has f called after every count, on the goroutine that calls
// Apply (the replay report watches how close keys come to their limits).
// Set it before the first Apply; nil stops it.
func (e *Engine) SetOnCount(f func(Counted)) { e.onCount = f }

// Key computes rule i's key for ev as Prepare does, appending the values to
// buf; ok is false when ev lacks one of the rule's characteristics.
func (e *Engine) Key(i int, ev *characteristics.Event, buf []byte) (key uint64, values []byte, ok bool) {
	off := len(buf)
	for _, c := range e.rules[i].Characteristics {
		if !c.Present(ev) {
			return 0, buf[:off], false
		}
		buf = AppendKey(buf, c, ev)
	}
	return counting.Hash(buf[off:]), buf, true
}

// Peek returns rule i's counter state for key at t without counting
// anything; ok is false when the counter cannot tell (a fleet-wide or
// multi-window counter). Safe beside Apply.
func (e *Engine) Peek(i int, key uint64, t time.Time) (res counting.Result, ok bool) {
	p, ok := e.counters[i].(interface {
		Peek(key uint64, now int64) counting.Result
	})
	if !ok {
		return counting.Result{}, false
	}
	return p.Peek(key, t.UnixNano()), true
}

// Forget drops rule i's count for key; ok is false when its counter cannot
// (a fleet-wide or multi-window counter).
func (e *Engine) Forget(i int, key uint64) (ok bool) {
	f, ok := e.counters[i].(interface{ Forget(key uint64) bool })
	if ok {
		f.Forget(key)
	}
	return ok
}

// ScopeOf turns the Values of a Counted of rule r into its scope.
func ScopeOf(r *rules.Rule, values []byte) []characteristics.Field { return scope(r, values) }

// Match is one rule's counting verdict on one event, prepared for Apply.
type Match struct {
	Rule     int32
	Count    bool    // count it: the counting expression matched (a caller may clear it)
	Mitigate bool    // the mitigation expression matched too
	N        float64 // what to add: 1, or the rule's score
	Value    uint64  // for a distinct rule, the hash of the distinct value
	Key      uint64
	KeyOff   uint32 // the key's characteristic values in Matches.Keys
	KeyLen   uint32
}

// Matches holds the matches of a run of events. Reuse it: Reset keeps its
// memory. Not safe for concurrent use.
type Matches struct {
	// Items are the matches of the rules whose counting expression matched.
	Items []Match
	Keys  []byte // characteristic values, each ended by 0xff
	// CountOnly leaves out, for the events prepared into m, what their
	// mitigation expressions matched, as Config.CountOnly does.
	CountOnly bool

	eval rules.Matches

	// mit holds one record per event prepared without CountOnly: a bit
	// per rule whose mitigation expression matched and whose key the
	// event has (Engine.words words), then the hash of each key group
	// (0 where the event has none). Most rules' mitigation expressions
	// match most events, and only a replay's report reads them, for the
	// few keys it holds a mitigation on: a record of a few words costs
	// much less than a Match per rule.
	mit  []uint64
	mitN int

	// The keys and values of the event being prepared, each made at most
	// once: an entry is current when its stamp is the event's.
	stamp  uint64
	values []keyed // per Engine.chars: one characteristic's value, ended
	groups []keyed // per Engine.groups: a whole key, and its hash
	// bits holds the event's counting, mitigation and keyed bits, a bit
	// per rule each (Engine.words words).
	bits []uint64
	// addrs caches the text of the client addresses m's events had, and
	// its hash: clients come back, and formatting an address (an IPv6
	// one above all) costs more than the rest of its key.
	addrs *addrCache
}

// keyed is a span of Matches.Keys made for one event.
type keyed struct {
	stamp    uint64
	off, len uint32
	hash     uint64
	ok       bool // the event has the value(s)
	hashed   bool // hash is set (a value's hash is made on demand)
	// For a value: ended is the hash of the value with its end, the key
	// of a group of that value alone, when endHashed.
	endHashed bool
	ended     uint64
}

// Reset empties m.
func (m *Matches) Reset() { m.Items, m.Keys, m.mit, m.mitN = m.Items[:0], m.Keys[:0], m.mit[:0], 0 }

// Mitigables returns how many events m holds a Mitigable of: the index
// Engine.Mitigable takes for the next event prepared without CountOnly.
func (m *Matches) Mitigables() int { return m.mitN }

// Prepare evaluates every rule on ev and appends to m a match per rule whose
// counting expression matched, and, unless CountOnly, what the mitigation
// expressions matched (Mitigable). It returns how many matches it appended.
// It reads no engine state and allocates nothing once m has grown.
//
// Rules keyed alike (most on ip.src) share one key and hash per event, and
// a characteristic in several keys (ip.src alone, with the user agent, with
// the JA4) is formatted once: New numbered both, so nothing is compared per
// event. The rules' verdicts are taken as words of bits, so an event costs
// a key per group its rules need and a match per rule that counts it, not
// a step per rule.
func (e *Engine) Prepare(ev *characteristics.Event, m *Matches) int {
	e.set.Eval(ev, &m.eval)
	n0 := len(m.Items)
	if len(m.values) < len(e.chars) || len(m.groups) < len(e.groups) {
		m.values = make([]keyed, len(e.chars))
		m.groups = make([]keyed, len(e.groups))
	}
	if len(m.bits) < 3*e.words {
		m.bits = make([]uint64, 3*e.words)
	}
	m.stamp++
	// The rules' verdicts as words, a bit per rule: walking the set bits
	// visits the one or two rules that count an event rather than every
	// rule, and the key groups are made from the words, not rule by rule.
	var rec []uint64 // the event's Mitigable
	if !e.countOnly && !m.CountOnly {
		off, n := len(m.mit), e.words+len(e.groups)
		m.mit = slices.Grow(m.mit, n)[:off+n]
		rec = m.mit[off:]
		m.mitN++
	}
	// Without a Mitigable, only the counted rules' mitigation verdicts
	// are read (Match.Mitigate), each where its match is made.
	cnt, mit, ok := m.bits[:e.words], m.bits[e.words:2*e.words], m.bits[2*e.words:3*e.words]
	for w := range cnt {
		c, mt := verdicts(&m.eval, w, len(e.rules), rec != nil)
		cnt[w], mit[w], ok[w] = c&e.keyed[w], mt&e.keyed[w], 0
	}
	// Make the key of every group a rule needs, each once; ok gets the
	// rules whose key the event has.
	if e.words == 1 { // up to 64 rules: the loop below, without its inner loops
		want := cnt[0]
		if rec != nil {
			want |= mit[0]
		}
		var have uint64
		for g, b := range e.members {
			var hash uint64
			if want&b != 0 {
				if k := e.makeKey(ev, m, int32(g)); k.ok {
					hash, have = k.hash, have|b
				}
			}
			if rec != nil {
				rec[1+g] = hash
			}
		}
		ok[0] = have
	} else {
		for g := range e.groups {
			members := e.members[g*e.words : (g+1)*e.words]
			var need uint64
			for w, b := range members {
				x := cnt[w]
				if rec != nil {
					x |= mit[w]
				}
				need |= x & b
			}
			var hash uint64
			if need != 0 {
				if k := e.makeKey(ev, m, int32(g)); k.ok {
					hash = k.hash
					for w, b := range members {
						ok[w] |= b
					}
				}
			}
			if rec != nil {
				rec[e.words+g] = hash
			}
		}
	}
	if rec != nil {
		for w := range ok {
			rec[w] = mit[w] & ok[w]
		}
	}
	for w := range cnt {
		for b := cnt[w] & ok[w]; b != 0; b &= b - 1 {
			i := w<<6 | bits.TrailingZeros64(b)
			p := &e.plan[i]
			var value uint64
			if p.distinct >= 0 {
				// Without the value there is nothing to count; the key
				// may still be mitigated.
				v := e.value(ev, m, p.distinct)
				if !v.ok {
					continue
				}
				if !v.hashed { // the value without its end
					v.hash, v.hashed = counting.Hash(m.Keys[v.off:v.off+v.len-1]), true
				}
				value = v.hash
			}
			n := 1.0
			if p.score != nil {
				if v, ok := p.score.Num(ev); ok {
					n = v
				} else {
					n = 0
				}
			}
			g := &m.groups[p.group]
			m.Items = append(m.Items, Match{})
			it := &m.Items[len(m.Items)-1]
			mitigate := mit[w]&(1<<(uint(i)&63)) != 0
			if rec == nil {
				mitigate = m.eval.Mitigate(i)
			}
			it.Rule, it.Count, it.Mitigate, it.N, it.Value = int32(i), true, mitigate, n, value
			it.Key, it.KeyOff, it.KeyLen = g.hash, g.off, g.len
		}
	}
	return len(m.Items) - n0
}

// verdicts returns word w of the bits of the counting and, with withMit,
// of the mitigation expressions that held in em, of a set of n rules.
func verdicts(em *rules.Matches, w, n int, withMit bool) (cnt, mit uint64) {
	cnt, mit = em.Words(w)
	if rest := n - w<<6; rest < 64 {
		// Words promises zeros past the rules; a mask keeps that true here
		// whatever em last evaluated.
		mask := uint64(1)<<uint(max(rest, 0)) - 1
		cnt, mit = cnt&mask, mit&mask
	}
	if !withMit {
		mit = 0
	}
	return cnt, mit
}

// Mitigable is what one prepared event's mitigation expressions matched:
// the rules, each with its key's hash, in rule order.
type Mitigable struct {
	bits []uint64 // per rule
	keys []uint64 // per key group
	plan []rulePlan
}

// Mitigable returns the Mitigable of the i-th event that e prepared into m
// without CountOnly since its Reset (Matches.Mitigables before the
// event's Prepare); m's events must all be e's.
func (e *Engine) Mitigable(m *Matches, i int) Mitigable {
	n := e.words + len(e.groups)
	rec := m.mit[i*n : (i+1)*n]
	return Mitigable{bits: rec[:e.words], keys: rec[e.words:], plan: e.plan}
}

// Keys returns the hashes of the event's keys, one per key group the rules
// share, 0 where the event has none (or a hash that is 0): a caller holding
// none of them has nothing to look up rule by rule.
func (k *Mitigable) Keys() []uint64 { return k.keys }

// Next returns the first rule from index from on whose mitigation
// expression matched the event, and the hash of its key; ok is false when
// there is none.
func (k *Mitigable) Next(from int) (rule int, key uint64, ok bool) {
	for w := from >> 6; w < len(k.bits); w++ {
		b := k.bits[w]
		if w == from>>6 {
			b &^= 1<<(uint(from)&63) - 1
		}
		if b != 0 {
			rule = w<<6 | bits.TrailingZeros64(b)
			return rule, k.keys[k.plan[rule].group], true
		}
	}
	return 0, 0, false
}

// value returns characteristic c's value in ev, made once per event: its
// text ended by keyEnd in m.Keys.
func (e *Engine) value(ev *characteristics.Event, m *Matches, c int32) *keyed {
	v := &m.values[c]
	if v.stamp == m.stamp {
		return v
	}
	off := len(m.Keys)
	c0 := e.chars[c]
	if c0.Kind() == characteristics.KindAddr && ev.IP.IsValid() && ev.IP.Zone() == "" {
		a := m.addr(ev.IP)
		m.Keys = append(append(m.Keys, a.text[:a.n]...), keyEnd)
		*v = keyed{stamp: m.stamp, off: uint32(off), len: uint32(len(m.Keys) - off), ok: true,
			hash: a.hash, hashed: true, ended: a.ended, endHashed: true}
		return v
	}
	var ok bool
	m.Keys, ok = appendKey(m.Keys, c0, ev)
	*v = keyed{stamp: m.stamp, off: uint32(off), len: uint32(len(m.Keys) - off), ok: ok}
	if !ok {
		m.Keys = m.Keys[:off]
	}
	return v
}

// makeKey makes key group g of ev in m: the values of its characteristics
// in order, and their hash.
func (e *Engine) makeKey(ev *characteristics.Event, m *Matches, g int32) *keyed {
	chars := e.groups[g]
	k := &m.groups[g]
	*k = keyed{stamp: m.stamp}
	if len(chars) == 1 { // the value is the key
		v := e.value(ev, m, chars[0])
		if !v.ok {
			return k
		}
		k.off, k.len = v.off, v.len
		if v.endHashed {
			k.hash, k.ok, k.hashed = v.ended, true, true
			return k
		}
	} else {
		for _, c := range chars {
			if !e.value(ev, m, c).ok {
				return k
			}
		}
		off := len(m.Keys)
		for _, c := range chars {
			v := &m.values[c]
			m.Keys = append(m.Keys, m.Keys[v.off:v.off+v.len]...)
		}
		k.off, k.len = uint32(off), uint32(len(m.Keys)-off)
	}
	k.hash, k.ok, k.hashed = counting.Hash(m.Keys[k.off:k.off+k.len]), true, true
	return k
}

// Apply counts the matches of one event, which happened at t, and appends
// a Trip to trips for every rule the event takes over its limit (each time,
// not only the first: the mitigation table extends what it holds). keys is
// the Matches.Keys the matches point into. It is safe for concurrent use;
// only calls in event order give reproducible counts.
func (e *Engine) Apply(t time.Time, items []Match, keys []byte, trips []Trip) []Trip {
	now := t.UnixNano()
	for i := range items {
		it := &items[i] // not a copy: most matches are skipped on one field
		if !it.Count || it.N == 0 {
			continue
		}
		var res counting.Result
		if d := e.distinct[it.Rule]; d != nil {
			res = d.AddDistinct(it.Key, it.Value, now)
		} else {
			res = e.counters[it.Rule].Add(it.Key, it.N, now)
		}
		if e.regular != nil {
			e.timing(it, now, &res)
		}
		if e.onCount != nil {
			e.onCount(Counted{Rule: int(it.Rule), Key: it.Key, Values: keys[it.KeyOff : it.KeyOff+it.KeyLen], Time: t, Result: res})
		}
		if !res.Exceeded {
			continue
		}
		r := e.rules[it.Rule]
		trips = append(trips, Trip{Rule: r, Index: int(it.Rule), Key: it.Key, Time: t, Expires: t.Add(r.MitigationTimeout),
			Result: res, Mitigate: it.Mitigate, KeyBytes: keys[it.KeyOff : it.KeyOff+it.KeyLen]})
	}
	return trips
}

// Expire forgets counters idle for two periods before t, so a long-running
// engine stays bounded.
func (e *Engine) Expire(t time.Time) {
	for _, c := range e.counters {
		if s, ok := c.(interface{ Sweep(int64) int }); ok {
			s.Sweep(t.UnixNano())
		}
	}
	e.regularKeys(t.UnixNano())
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
	k, ev := e.regularKeys(0)
	return keys + k, evictions + ev
}

// scope turns key bytes back into the rule's characteristic values.
func scope(r *rules.Rule, key []byte) []characteristics.Field {
	out := make([]characteristics.Field, 0, len(r.Characteristics))
	for _, c := range r.Characteristics {
		var v []byte
		v, key = NextKeyValue(key)
		out = append(out, characteristics.Field{Name: c.String(), Value: string(v)})
	}
	return out
}

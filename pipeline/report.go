package pipeline

import (
	"cmp"
	"net/netip"
	"slices"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/throttle"
	"github.com/guardd/guardd/mitigation/verdict"
	"github.com/guardd/guardd/rules"
	"github.com/guardd/guardd/rules/engine"
)

// Report records, for a replay, every mitigation made (the store holds only
// those in force) and, with Clients, what the mitigations in force did to
// each client's requests. It is used by Run's sequencer only.
type Report struct {
	entries map[reportKey]*Mitigation
	// keyed holds the keys of entries, whatever the rule: most events' keys
	// have none, and one lookup per key then spares one per rule matched.
	keyed map[uint64]struct{}
	// keyBits has bit k%len of every key in keyed: most lookups end on a
	// clear bit, without hashing into the map.
	keyBits *[keyBitWords]uint64
	clients map[netip.Addr]*clientStats // nil unless NewReport(true)
	// limits, when set, are the throttle rules simulated on every request
	// (SimulateThrottle); throttled their outcomes per rule.
	limits    *throttle.Rules
	throttled []*Throttled
	// OnVerdict, if set, is handed the verdict on every request, in the
	// log's order, with its client and time (on Run's sequencer).
	OnVerdict func(client netip.Addr, t time.Time, d verdict.Decision)
	// scores holds the anomaly scores' mitigations by address (a
	// single-address prefix) or network; scoreBits the prefix lengths
	// among its keys.
	scores    map[netip.Prefix]*Mitigation
	scoreBits []int
}

// Throttled is what one throttle rule did over a replay.
type Throttled struct {
	Rule string
	// Shadow: the rule is in shadow mode; Refused counts the requests it
	// would have refused, and none of them is actioned.
	Shadow bool
	// Counted is how many requests the rule counted, Refused how many of
	// them it refused, from how many client addresses.
	Counted, Refused int64
	Clients          int

	rule    *rules.Rule
	refused map[netip.Addr]struct{}
}

// keyBitWords sizes Report.keyBits: 64K bits, 8 KiB.
const keyBitWords = 1024

func keyBit(k uint64) (word int, bit uint64) {
	return int(k/64) % keyBitWords, 1 << (k % 64)
}

type reportKey struct {
	rule int32 // index in the replay's one rule set
	key  uint64
}

// Mitigation is one rule's mitigation on one scope over a replay.
type Mitigation struct {
	Rule      string
	Action    mitigation.Action
	Scope     []characteristics.Field // in the rule's characteristic order
	FirstSeen time.Time               // time of the first trip
	LastSeen  time.Time               // time of the last request it applied to
	Expires   time.Time               // the latest expiry
	Count     int64                   // requests it applied to, the tripping one included
	Trips     int64                   // events that took the rule over its limit on this scope
}

type clientStats struct {
	requests, actioned int64
	actions            map[mitigation.Action]int64
	rules              []string
	shadow             map[string]int64 // per shadow throttle rule, requests it would have refused
}

// NewReport returns an empty report; clients also keeps per-client impact.
func NewReport(clients bool) *Report {
	r := &Report{entries: map[reportKey]*Mitigation{}, keyed: map[uint64]struct{}{}, keyBits: new([keyBitWords]uint64)}
	if clients {
		r.clients = map[netip.Addr]*clientStats{}
	}
	return r
}

// SimulateThrottle makes the replay admit or refuse every request that a
// rate-limiting throttle rule of rs counts, with the decision API's code
// (throttle.Rules.Counts and Admit) on the request's own time; the
// refusals are actions in Clients and are summed up per rule in Throttled.
// rs must be built from the rule set of the replay's pipeline. Concurrency
// rules and shedding are not simulated (see throttle.Rules.Replayable);
// without rate rules it does nothing, and the replay costs what it did.
func (r *Report) SimulateThrottle(rs *throttle.Rules) {
	if !rs.Replayable() {
		return
	}
	r.limits = rs
}

// throttle admits or refuses one request's throttle counts at t and records
// the outcome per rule; it returns the verdict of the enforced rules.
func (r *Report) throttle(cs []throttle.Count, client netip.Addr, t time.Time) throttle.Verdict {
	v := r.limits.Admit(cs, t)
	for i := range cs {
		c := &cs[i]
		tr := r.throttledOf(c.Rule(), c.Shadow())
		tr.Counted++
		if !c.Refused {
			continue
		}
		tr.Refused++
		if !client.IsValid() {
			continue
		}
		if _, ok := tr.refused[client]; !ok {
			tr.refused[client] = struct{}{}
		}
		if c.Shadow() && r.clients != nil {
			cs := r.client(client)
			if cs.shadow == nil {
				cs.shadow = map[string]int64{}
			}
			cs.shadow[tr.Rule]++
		}
	}
	return v
}

func (r *Report) throttledOf(rule *rules.Rule, shadow bool) *Throttled {
	for _, tr := range r.throttled {
		if tr.rule == rule {
			return tr
		}
	}
	tr := &Throttled{Rule: rule.Name, Shadow: shadow, rule: rule, refused: map[netip.Addr]struct{}{}}
	r.throttled = append(r.throttled, tr)
	return tr
}

// Throttled returns, ordered by rule name, what each throttle rule did:
// only rules that counted at least one request, and none unless
// SimulateThrottle was given rate rules.
func (r *Report) Throttled() []Throttled {
	out := make([]Throttled, 0, len(r.throttled))
	for _, tr := range r.throttled {
		t := *tr
		t.Clients = len(tr.refused)
		t.rule, t.refused = nil, nil
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b Throttled) int { return cmp.Compare(a.Rule, b.Rule) })
	return out
}

func (r *Report) client(a netip.Addr) *clientStats {
	cs := r.clients[a]
	if cs == nil {
		cs = &clientStats{}
		r.clients[a] = cs
	}
	return cs
}

// held is the tripper's question (heldRecord) answered from the report:
// a replay's report holds what its store holds, and nothing else deletes
// from that store.
func (r *Report) held(tr *engine.Trip, action mitigation.Action, slack time.Duration, now time.Time) bool {
	e := r.entries[reportKey{int32(tr.Index), tr.Key}]
	if e != nil && e.Action == action && e.Expires.Add(slack).After(tr.Expires) && e.Expires.After(now) {
		e.record(e.Action, e.Expires)
		return true
	}
	return false
}

// added records a trip the store holds a mitigation for, with action and
// expiry as the store holds them.
func (r *Report) added(tr *engine.Trip, m mitigation.Mitigation, _ time.Time) {
	k := reportKey{int32(tr.Index), tr.Key}
	e := r.entries[k]
	if e == nil {
		e = &Mitigation{Rule: tr.Rule.Name, Scope: tr.Scope(), FirstSeen: tr.Time}
		r.entries[k] = e
		r.keyed[tr.Key] = struct{}{}
		w, b := keyBit(tr.Key)
		r.keyBits[w] |= b
	}
	e.record(m.Action, m.Expires)
}

// scored records a mitigation an anomaly score made, as the store holds it.
func (r *Report) scored(m mitigation.Mitigation, _ time.Time) {
	if len(m.Scope) != 1 {
		return
	}
	p, ok := mitigation.Network(m.Scope[0])
	if !ok {
		return
	}
	if r.scores == nil {
		r.scores = map[netip.Prefix]*Mitigation{}
	}
	e := r.scores[p]
	if e == nil {
		e = &Mitigation{Rule: m.Rule, Scope: []characteristics.Field{{Name: m.Scope[0].Name, Value: m.Scope[0].Value}}, FirstSeen: m.Created}
		r.scores[p] = e
		if !slices.Contains(r.scoreBits, p.Bits()) {
			r.scoreBits = append(r.scoreBits, p.Bits())
		}
	}
	e.record(m.Action, m.Expires)
}

// record counts one more trip of e, held with action and expires.
func (e *Mitigation) record(action mitigation.Action, expires time.Time) {
	e.Trips++
	e.Action = action
	e.Expires = expires
}

// observe records the verdict on one request of client at t.
func (r *Report) observe(client netip.Addr, t time.Time, d verdict.Decision) {
	if r.OnVerdict != nil {
		r.OnVerdict(client, t, d)
	}
	if r.clients == nil || !client.IsValid() {
		return
	}
	cs := r.client(client)
	cs.requests++
	if d.Allow || d.Shed {
		return
	}
	cs.actioned++
	if cs.actions == nil {
		cs.actions = map[mitigation.Action]int64{}
	}
	cs.actions[d.Action]++
	if !slices.Contains(cs.rules, d.Rule) {
		cs.rules = append(cs.rules, d.Rule)
	}
}

// verdicts reports whether the report reads the verdict on each request
// (per-client impact, OnVerdict); without, the sequencer only tallies the
// mitigations each request meets (replayRequest.tally).
func (r *Report) verdicts() bool { return r.clients != nil || r.OnVerdict != nil }

// replayRequest is a replayed request as verdict.Decide reads the tables in
// force: what the worker worked out (the allowlist, the throttle counts,
// which rules' mitigation expressions matched and on which keys) and the
// report's records of the mitigations made so far, the request's own trips
// included. Each mitigation it yields is counted as applied.
type replayRequest struct {
	r       *Report
	allowed bool
	page    bool
	client  netip.Addr
	t       time.Time
	counts  []throttle.Count
	mk      engine.Mitigable
	rules   []*rules.Rule
	// The walk over mk: from is the rule index Next resumes at, -1 at the
	// end; rules keyed alike match with the same key, so the key's
	// presence is asked once per key.
	started, known, has bool
	from                int
	lastKey             uint64
	bits                int // the next of the report's scoreBits
	// applied: a mitigation in force applied (one with ActionLog included).
	applied bool
}

// tally does what verdict.Decide does to the report, without the verdict:
// an allowlisted request meets nothing; any other is admitted or refused
// by the throttle rules, and every mitigation in force over it is counted
// as applied (TestReplayTallyAsVerdict).
func (q *replayRequest) tally() {
	if q.allowed {
		return
	}
	q.Throttle()
	for {
		if _, ok := q.Next(); !ok {
			return
		}
	}
}

func (q *replayRequest) Allowlisted() bool { return q.allowed }

// Cleared: a replay has no clearances.
func (q *replayRequest) Cleared() bool { return false }

func (q *replayRequest) PageView() bool { return q.page }

// Count does nothing: the sequencer counts the request's log line, and
// hands its trips to the store, before the verdict.
func (q *replayRequest) Count() {}

func (q *replayRequest) Throttle() throttle.Verdict {
	if len(q.counts) == 0 {
		return throttle.Verdict{}
	}
	return q.r.throttle(q.counts, q.client, q.t)
}

func (q *replayRequest) Next() (verdict.Mitigation, bool) {
	r := q.r
	if !q.started {
		q.started = true
		if len(r.entries) == 0 || !r.anyKey(q.mk.Keys()) {
			q.from = -1
		}
	}
	if q.from < 0 {
		return q.nextScore()
	}
	for rule, key, ok := q.mk.Next(q.from); ok; rule, key, ok = q.mk.Next(rule + 1) {
		if !q.known || key != q.lastKey {
			w, b := keyBit(key)
			if q.has = r.keyBits[w]&b != 0; q.has {
				_, q.has = r.keyed[key]
			}
			q.lastKey, q.known = key, true
		}
		if !q.has {
			continue
		}
		e := r.entries[reportKey{int32(rule), key}]
		if e == nil || !q.t.Before(e.Expires) {
			continue
		}
		e.Count++
		e.LastSeen = q.t
		q.applied = true
		q.from = rule + 1
		ru := q.rules[rule]
		return verdict.Mitigation{Action: e.Action, Rule: e.Rule, Expires: e.Expires, Order: rule, Limit: ru.Requests, Window: ru.Period,
			Fallback: ru.Challenge.Fallback}, true
	}
	q.from = -1
	return q.nextScore()
}

// nextScore yields, after the rules' mitigations, the anomaly scores'
// mitigations on the client's address or networks: like a manual
// decision, such a mitigation covers every request of its scope.
func (q *replayRequest) nextScore() (verdict.Mitigation, bool) {
	r := q.r
	if len(r.scores) == 0 || !q.client.IsValid() {
		return verdict.Mitigation{}, false
	}
	ua := q.client.Unmap()
	for q.bits < len(r.scoreBits) {
		p, err := ua.Prefix(r.scoreBits[q.bits])
		q.bits++
		if err != nil {
			continue
		}
		e := r.scores[p]
		if e == nil || !q.t.Before(e.Expires) {
			continue
		}
		e.Count++
		e.LastSeen = q.t
		q.applied = true
		return verdict.Mitigation{Action: e.Action, Rule: e.Rule, Expires: e.Expires, Order: verdict.NoRule, Fallback: mitigation.ActionRateLimit}, true
	}
	return verdict.Mitigation{}, false
}

// anyKey reports whether a key of keys may be one of a mitigation: most
// events have none, and end here on clear bits.
func (r *Report) anyKey(keys []uint64) bool {
	for _, k := range keys {
		if w, b := keyBit(k); r.keyBits[w]&b != 0 {
			return true
		}
	}
	return false
}

// Mitigations returns every mitigation made, ordered by first trip.
func (r *Report) Mitigations() []Mitigation {
	out := make([]Mitigation, 0, len(r.entries)+len(r.scores))
	for _, e := range r.entries {
		out = append(out, *e)
	}
	for _, e := range r.scores {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b Mitigation) int {
		if c := a.FirstSeen.Compare(b.FirstSeen); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Rule, b.Rule); c != 0 {
			return c
		}
		for i := range min(len(a.Scope), len(b.Scope)) {
			if c := cmp.Compare(a.Scope[i].Value, b.Scope[i].Value); c != 0 {
				return c
			}
		}
		return 0
	})
	return out
}

// Client is what a replay's mitigations did to one client address.
type Client struct {
	Addr netip.Addr
	// Requests is how many requests the client made; Actioned how many of
	// them a mitigation in force refused or answered in the application's
	// place (any action but log), with the strongest action per request in
	// Actions, and the rules of those mitigations in Rules.
	Requests, Actioned int64
	Actions            map[mitigation.Action]int64
	Rules              []string
	// Mitigated is set when a mitigation on the client's address or prefix,
	// with an action other than log, covered it at any time.
	Mitigated bool
	// Shadow counts, per shadow throttle rule, the requests it would have
	// refused (none of them actioned).
	Shadow map[string]int64
}

// Clients returns, ordered by address, every client that received an
// action on at least one request or that an address or prefix mitigation
// covered. It is empty unless the report was made with clients.
func (r *Report) Clients() []Client {
	if r.clients == nil {
		return nil
	}
	// Address and prefix mitigations by prefix length: a client is covered
	// where its address, cut to that length, is a key.
	nets := map[int]map[netip.Prefix][]string{}
	for _, e := range r.all() {
		if e.Action == mitigation.ActionLog || len(e.Scope) != 1 {
			continue
		}
		if p, ok := mitigation.Network(e.Scope[0]); ok {
			if nets[p.Bits()] == nil {
				nets[p.Bits()] = map[netip.Prefix][]string{}
			}
			nets[p.Bits()][p] = append(nets[p.Bits()][p], e.Rule)
		}
	}
	var out []Client
	for a, cs := range r.clients {
		c := Client{Addr: a, Requests: cs.requests, Actioned: cs.actioned, Actions: cs.actions, Rules: slices.Clone(cs.rules), Shadow: cs.shadow}
		ua := a.Unmap()
		for bits, ps := range nets {
			if p, err := ua.Prefix(bits); err == nil {
				if rs, ok := ps[p]; ok {
					c.Mitigated = true
					c.Rules = appendNew(c.Rules, rs)
				}
			}
		}
		if c.Actioned > 0 || c.Mitigated {
			slices.Sort(c.Rules)
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b Client) int { return a.Addr.Compare(b.Addr) })
	return out
}

// all returns the report's mitigations, the rules' and the scores'.
func (r *Report) all() []*Mitigation {
	out := make([]*Mitigation, 0, len(r.entries)+len(r.scores))
	for _, e := range r.entries {
		out = append(out, e)
	}
	for _, e := range r.scores {
		out = append(out, e)
	}
	return out
}

func appendNew(dst, src []string) []string {
	for _, s := range src {
		if !slices.Contains(dst, s) {
			dst = append(dst, s)
		}
	}
	return dst
}

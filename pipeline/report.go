package pipeline

import (
	"cmp"
	"net/netip"
	"slices"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/rules/engine"
)

// Report records, for a replay, every mitigation made (the store holds only
// those in force) and, with Clients, what the mitigations in force did to
// each client's requests. It is used by Run's sequencer only.
type Report struct {
	entries map[reportKey]*Mitigation
	// keyed holds the keys of entries, whatever the rule: most events' keys
	// have none, and one lookup per key then spares one per rule matched.
	keyed   map[uint64]struct{}
	clients map[netip.Addr]*clientStats // nil unless NewReport(true)
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
}

// NewReport returns an empty report; clients also keeps per-client impact.
func NewReport(clients bool) *Report {
	r := &Report{entries: map[reportKey]*Mitigation{}, keyed: map[uint64]struct{}{}}
	if clients {
		r.clients = map[netip.Addr]*clientStats{}
	}
	return r
}

// entry returns the record of tr's rule and key, nil if none.
func (r *Report) entry(tr *engine.Trip) *Mitigation {
	return r.entries[reportKey{int32(tr.Index), tr.Key}]
}

// trip records a trip the store holds a mitigation for, with action and
// expiry as the store holds them.
func (r *Report) trip(tr *engine.Trip, action mitigation.Action, expires time.Time) {
	k := reportKey{int32(tr.Index), tr.Key}
	e := r.entries[k]
	if e == nil {
		e = &Mitigation{Rule: tr.Rule.Name, Scope: tr.Scope(), FirstSeen: tr.Time}
		r.entries[k] = e
		r.keyed[tr.Key] = struct{}{}
	}
	e.Trips++
	e.Action = action
	e.Expires = expires
}

// judge applies the mitigations in force at t to one request, as the
// decision API would: a rule's mitigation covers the requests its mitigation
// expression matches on its scope, and an allowlisted request receives no
// action whatever the scope. It reports whether any applied.
func (r *Report) judge(p *Pipeline, client netip.Addr, allowed bool, t time.Time, items []engine.Match, keys []byte) bool {
	var cs *clientStats
	if r.clients != nil && client.IsValid() {
		if cs = r.clients[client]; cs == nil {
			cs = &clientStats{}
			r.clients[client] = cs
		}
		cs.requests++
	}
	if len(r.entries) == 0 || allowed {
		return false
	}
	applied := false
	best := (*Mitigation)(nil)
	// Rules keyed alike match with the same key: ask once per key.
	var lastKey uint64
	known, has := false, false
	for _, it := range items {
		if !it.Mitigate {
			continue
		}
		if !known || it.Key != lastKey {
			_, has = r.keyed[it.Key]
			lastKey, known = it.Key, true
		}
		if !has {
			continue
		}
		e := r.entries[reportKey{it.Rule, it.Key}]
		if e == nil || !t.Before(e.Expires) {
			continue
		}
		e.Count++
		e.LastSeen = t
		applied = true
		if e.Action != mitigation.ActionLog && (best == nil || e.Action.Stronger(best.Action)) {
			best = e
		}
	}
	if cs != nil && best != nil {
		cs.actioned++
		if cs.actions == nil {
			cs.actions = map[mitigation.Action]int64{}
		}
		cs.actions[best.Action]++
		if !slices.Contains(cs.rules, best.Rule) {
			cs.rules = append(cs.rules, best.Rule)
		}
	}
	return applied
}

// Mitigations returns every mitigation made, ordered by first trip.
func (r *Report) Mitigations() []Mitigation {
	out := make([]Mitigation, 0, len(r.entries))
	for _, e := range r.entries {
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
	for _, e := range r.entries {
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
		c := Client{Addr: a, Requests: cs.requests, Actioned: cs.actioned, Actions: cs.actions, Rules: slices.Clone(cs.rules)}
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

func appendNew(dst, src []string) []string {
	for _, s := range src {
		if !slices.Contains(dst, s) {
			dst = append(dst, s)
		}
	}
	return dst
}

package pipeline

import (
	"net/netip"
	"time"

	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/rules/engine"
	"github.com/guardd/guardd/scoring"
)

// Scoring (a Pipeline's, from the configuration's scoring section) turns the trips of rules with anomaly_score into points on the
// client's anomaly score, and a score that reaches a threshold into a
// mitigation of rule scoring.RuleName (origin score) on the client's
// address or network: a challenge, then a block. Its scores outlive
// reloads (BuildOptions.Scorer): they are the clients', not the
// configuration's.
type Scoring struct {
	Scorer *scoring.Scorer
	// Timeout is how long a threshold's mitigation lasts after the
	// contribution that reached it.
	Timeout time.Duration
}

// levelActions are the mitigations of the score levels.
var levelActions = [...]mitigation.Action{
	scoring.LevelChallenge: mitigation.ActionChallenge,
	scoring.LevelBlock:     mitigation.ActionBlock,
}

// score adds tr's points to the score of the client whose address is in
// tr's key, and mitigates what reached a threshold.
func (t *tripper) score(sc Scoring, tr *engine.Trip, now time.Time) {
	addr, ok := tripAddr(tr)
	if !ok {
		return
	}
	o := sc.Scorer.Add(addr, tr.Rule.Name, tr.Rule.AnomalyScore, tr.Time)
	expires := tr.Time.Add(sc.Timeout)
	if o.Client != scoring.LevelNone {
		t.scoreMitigation(mitigation.Scope{{Name: "ip.src", Value: addr.String()}}, levelActions[o.Client], expires, sc.Timeout/10, now)
	}
	if o.Network != scoring.LevelNone {
		t.scoreMitigation(mitigation.Scope{{Name: "ip.src.prefix", Value: o.Net.String()}}, levelActions[o.Network], expires, sc.Timeout/10, now)
	}
}

// tripAddr finds the client address in a trip's key: a rule with
// anomaly_score is keyed on ip.src (rules checks it at load).
func tripAddr(tr *engine.Trip) (netip.Addr, bool) {
	key := tr.KeyBytes
	for _, c := range tr.Rule.Characteristics {
		var v []byte
		v, key = engine.NextKeyValue(key)
		if c.String() == "ip.src" {
			a, err := netip.ParseAddr(string(v))
			return a, err == nil
		}
	}
	return netip.Addr{}, false
}

// scoreMitigation adds a score's mitigation unless one as strong already
// covers the scope long enough: a score that has decayed from a block to a
// challenge leaves the block in place.
func (t *tripper) scoreMitigation(sc mitigation.Scope, action mitigation.Action, expires time.Time, slack time.Duration, now time.Time) {
	if !expires.After(now) {
		return
	}
	if held, ok := t.store.LookupRule(sc.Key(), scoring.RuleName, now); ok && held.Expires.After(now) &&
		(held.Action.Stronger(action) || held.Action == action && held.Expires.Add(slack).After(expires)) {
		return
	}
	m, ok, err := t.store.Add(mitigation.Mitigation{Rule: scoring.RuleName, Action: action, Scope: sc, Expires: expires, Origin: mitigation.OriginScore}, now)
	if err != nil {
		t.addFailed(scoring.RuleName, err, now)
		return
	}
	if !ok {
		return // allowlisted
	}
	t.metrics.trip(scoring.RuleName, action)
	t.held.scored(m, now)
}

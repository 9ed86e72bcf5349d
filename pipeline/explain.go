package pipeline

import (
	"net/netip"
	"strings"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/counting"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/rules/engine"
	"github.com/guardd/guardd/scoring"
)

// Explanation says why a client is mitigated and how close it is to each
// rule's limit: the admin API's GET /v1/explain/{addr}.
type Explanation struct {
	Address     string                  `json:"address"`
	Allowlisted bool                    `json:"allowlisted"`
	Mitigations []mitigation.Mitigation `json:"mitigations"` // active, on the address or a prefix holding it
	Rules       []RuleState             `json:"rules"`
	// AnomalyScore is the client's anomaly score now, and ScoreReasons the
	// rules that made it, strongest first (docs/rules.md "Anomaly scores").
	AnomalyScore float64                `json:"anomaly_score"`
	ScoreReasons []scoring.Contribution `json:"score_reasons"`
	Time         time.Time              `json:"time"`
}

// RuleState is one rule's count for the client right now.
type RuleState struct {
	Rule          string           `json:"rule"`
	Action        string           `json:"action"`
	Scope         mitigation.Scope `json:"scope,omitempty"`
	Count         float64          `json:"count"`
	Limit         float64          `json:"limit"`
	PeriodSeconds float64          `json:"period_seconds"`
	Ratio         float64          `json:"ratio"`
	Exceeded      bool             `json:"exceeded"`
	Note          string           `json:"note,omitempty"` // why there is no count
}

// Explain explains addr at now: the mitigations of active on addr or on a
// prefix holding it, whether allow lets it through, and, per rule of p, the
// count of addr's key without counting anything.
func (p *Pipeline) Explain(addr netip.Addr, active []mitigation.Mitigation, allow mitigation.Allowlist, now time.Time) Explanation {
	out := Explanation{Address: addr.String(), Mitigations: []mitigation.Mitigation{}, Rules: []RuleState{}, Time: now.UTC()}
	out.Allowlisted = allow.Allows(mitigation.Scope{{Name: "ip.src", Value: addr.String()}})
	for _, m := range active {
		for _, pr := range m.Scope {
			if covers(pr, addr) {
				out.Mitigations = append(out.Mitigations, m)
				break
			}
		}
	}
	out.AnomalyScore, out.ScoreReasons = p.scoring.Scorer.Explain(addr, now)
	if out.ScoreReasons == nil {
		out.ScoreReasons = []scoring.Contribution{}
	}
	ev := characteristics.Event{IP: addr, Time: now}
	p.Enrich(&ev)
	eng := p.Engine()
	var buf []byte
	for i, rl := range eng.Rules() {
		st := RuleState{Rule: rl.Name, Action: rl.Action.String(), Limit: rl.Requests, PeriodSeconds: rl.Period.Seconds()}
		key, vals, ok := eng.Key(i, &ev, buf[:0])
		buf = vals
		if !ok {
			var names []string
			for _, c := range rl.Characteristics {
				names = append(names, c.String())
			}
			st.Note = "keyed on " + strings.Join(names, ", ") + ": not known from the address alone"
			out.Rules = append(out.Rules, st)
			continue
		}
		st.Scope = mitigation.Scope(engine.ScopeOf(rl, vals))
		res, ok := eng.Peek(i, key, now)
		if !ok {
			st.Note = "its counter (fleet-wide or several windows) cannot be read without counting"
		} else {
			st.Count, st.Exceeded = res.Count, res.Exceeded
			if rl.Requests > 0 {
				st.Ratio = res.Count / rl.Requests
			}
		}
		out.Rules = append(out.Rules, st)
	}
	return out
}

// covers reports whether the scope pair p (ip.src or ip.src.prefix) holds
// addr.
func covers(p mitigation.Pair, addr netip.Addr) bool {
	n, ok := mitigation.Network(p)
	return ok && n.Contains(addr.Unmap().WithZone(""))
}

// Forget resets the count of the rule that made m for m's key, when an
// operator deletes m: the rule trips again only if the client goes over the
// limit anew. found is false when m is not a rule's or no rule of p made it;
// reset is false when the rule's counter cannot forget one key (fleet-wide
// or several windows), so the rule may trip again at once.
func (p *Pipeline) Forget(m mitigation.Mitigation) (found, reset bool) {
	if m.Origin != mitigation.OriginRule {
		return false, false
	}
	eng := p.Engine()
	for i, rl := range eng.Rules() {
		if rl.Name != m.Rule || len(rl.Characteristics) != len(m.Scope) {
			continue
		}
		var vals []byte
		for _, pr := range m.Scope {
			vals = engine.AppendKeyValue(vals, pr.Value)
		}
		return true, eng.Forget(i, counting.Hash(vals))
	}
	return false, false
}

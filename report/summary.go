package report

import (
	"cmp"
	"slices"

	"github.com/guardd/guardd/mitigation"
)

// ColorActed draws the clients acted on in the summaries that open both
// pages; the Chromium tests look for it near the top of the page.
const ColorActed = "#7a4fc9"

// Summary opens the replay report: who was acted on, by which action and
// which rules, before the per-rule detail.
type Summary struct {
	// Recorded is false when the replay did not follow clients (Info.Clients
	// is nil): then only the rules' part is known.
	Recorded bool
	Clients  int // clients with a request acted on or covered by an address or prefix mitigation
	// ByAction counts, per action, the clients that had at least one
	// request answered with it and those requests. Block and challenge are
	// always there, side by side, even at 0.
	ByAction []ActionCount
	Acted    []RuleActed // the rules that tripped or refused, most keys first
	Top      []KeyReport // the first of Replay.Top
}

// ActionCount is what one action did.
type ActionCount struct {
	Action            string
	Clients, Requests int64
}

// RuleActed is one rule that acted.
type RuleActed struct {
	Name, Action string
	Keys         int   // keys mitigated
	Clients      int64 // clients whose requests its mitigations answered (0 when not recorded)
	Trips        int64 // counts over the limit
}

// summaryTop is how many keys the summary shows; the full list follows.
const summaryTop = 5

// Summary computes the report's opening summary.
func (r *Replay) Summary() Summary {
	s := Summary{Recorded: r.Clients != nil}
	perAction := map[string]*ActionCount{}
	for _, a := range []string{mitigation.ActionBlock.String(), mitigation.ActionChallenge.String()} {
		perAction[a] = &ActionCount{Action: a}
	}
	perRule := map[string]int64{}
	for _, c := range r.Clients {
		if c.Actioned == 0 && !c.Mitigated {
			continue
		}
		s.Clients++
		for a, n := range c.Actions {
			if n == 0 || a == mitigation.ActionLog {
				continue
			}
			ac := perAction[a.String()]
			if ac == nil {
				ac = &ActionCount{Action: a.String()}
				perAction[a.String()] = ac
			}
			ac.Clients++
			ac.Requests += n
		}
		for _, rl := range c.Rules {
			perRule[rl]++
		}
	}
	for _, ac := range perAction {
		s.ByAction = append(s.ByAction, *ac)
	}
	slices.SortFunc(s.ByAction, func(a, b ActionCount) int {
		return cmp.Or(cmp.Compare(rankOf(b.Action), rankOf(a.Action)), cmp.Compare(a.Action, b.Action))
	})
	for _, rl := range r.Rules {
		if rl.Mitigations == 0 && rl.TotalTrips == 0 && perRule[rl.Name] == 0 {
			continue
		}
		s.Acted = append(s.Acted, RuleActed{Name: rl.Name, Action: rl.Action, Keys: rl.Mitigations, Clients: perRule[rl.Name], Trips: rl.TotalTrips})
	}
	for _, t := range r.Throttled {
		if t.Refused > 0 && !t.Shadow {
			s.Acted = append(s.Acted, RuleActed{Name: t.Rule, Action: mitigation.ActionThrottle.String(), Clients: int64(t.Clients)})
		}
	}
	slices.SortFunc(s.Acted, func(a, b RuleActed) int {
		return cmp.Or(cmp.Compare(b.Keys, a.Keys), cmp.Compare(b.Clients, a.Clients), cmp.Compare(a.Name, b.Name))
	})
	s.Top = r.Top[:min(len(r.Top), summaryTop)]
	return s
}

// rankOf orders actions as enforcement does: the strongest first.
func rankOf(name string) int {
	a, err := mitigation.ParseAction(name)
	if err != nil {
		return -1
	}
	n := 0
	for _, o := range mitigation.Names() {
		if b, _ := mitigation.ParseAction(o); a.Stronger(b) {
			n++
		}
	}
	return n
}

// Quiet lists the rules that counted nothing: the report folds them.
func (r *Replay) Quiet() []RuleReport {
	var out []RuleReport
	for _, rl := range r.Rules {
		if rl.TotalCounted == 0 {
			out = append(out, rl)
		}
	}
	return out
}

package decision

import (
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/guardd/guardd/challenge"
	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/decision/http1"
	"github.com/guardd/guardd/mitigation/verdict"
	"github.com/guardd/guardd/rules"
)

// HeaderForwardedProto tells /v1/respond the scheme of the client's
// request, for the clearance cookie's Secure attribute (docs/nginx.md's
// @guardd location sets it to $scheme).
const HeaderForwardedProto = "X-Forwarded-Proto"

// challengeOf is the rule's challenge settings, the defaults for a
// mitigation no loaded rule made (a manual challenge).
func (st *ruleState) challengeOf(rule string) rules.Challenge {
	if ri, ok := st.index[rule]; ok && st.rules[ri].Action == mitigation.ActionChallenge {
		return st.rules[ri].Challenge
	}
	return rules.Challenge{Fallback: mitigation.ActionRateLimit}
}

// answerChallenge turns a page view's challenge (verdict.Decide has given
// any other request the rule's fallback) into what the client gets: a
// signed challenge for the page, unless its address has been shown too
// many without passing (then a block). Without a Gate there is no page:
// /v1/respond answers the challenge as the default fallback, 429.
func (h *Handler) answerChallenge(ev *characteristics.Event, d Decision, st *ruleState, s *scratch, now time.Time) Decision {
	if h.gate == nil {
		return d
	}
	ch := st.challengeOf(d.Rule)
	if h.gate.Shown(ev, d.Rule, now) {
		d.Action = mitigation.ActionBlock
		return d
	}
	s.tok = h.gate.AppendChallenge(s.tok[:0], ev, d.Rule, ch, challenge.ReturnURL(requestURI(ev, s)), now)
	d.Token, d.Tier, d.Difficulty = s.tok, ch.Tier, h.gate.Difficulty(ch.Difficulty)
	return d
}

// requestURI rebuilds the request's URI from the event, in s.uri.
func requestURI(ev *characteristics.Event, s *scratch) string {
	if ev.Query == "" {
		return ev.Path
	}
	s.uri = append(append(append(s.uri[:0], ev.Path...), '?'), ev.Query...)
	return string(s.uri)
}

// decideReserved answers a request under challenge.PathPrefix: guardd's own,
// never the application's. The solve endpoint checks a solution: a pass
// carries the clearance to /v1/respond, which sets it and sends the client
// back; a proof that does not hold is a block (the client was escalated);
// anything else is a new challenge for the same return URL.
func (h *Handler) decideReserved(ev *characteristics.Event, s *scratch, now time.Time) Decision {
	if ev.Path != challenge.SolvePath || (ev.Method != "GET" && ev.Method != "HEAD") {
		return Decision{Decision: verdict.Decision{Action: mitigation.ActionBlock}, Reserved: true}
	}
	o := h.gate.Solve(ev, now)
	d := Decision{Decision: verdict.Decision{Action: mitigation.ActionChallenge, Rule: o.Rule, Retry: time.Second}}
	switch {
	case o.Reason == challenge.ReasonOK:
		s.tok = append(s.tok[:0], o.Clearance...)
		d.Token, d.Solved = s.tok, true
	case o.Escalated:
		d.Action = mitigation.ActionBlock
	default:
		ch := h.state.Load().challengeOf(o.Rule)
		if o.Rule != "" {
			ch.Tier, ch.Difficulty = o.Tier, o.Difficulty
		}
		s.tok = h.gate.AppendChallenge(s.tok[:0], ev, o.Rule, ch, o.Return, now)
		d.Token, d.Tier, d.Difficulty = s.tok, ch.Tier, h.gate.Difficulty(ch.Difficulty)
	}
	return d
}

// respondChallenge renders a challenge decision: the page, or the solved
// challenge's cookie and redirect. It reports false for a decision without
// a challenge token (no Gate: the fallback answers).
func (h *Handler) respondChallenge(w *http1.Response, r *http1.Request, p parsedDecision, uri string) bool {
	if h.gate == nil || p.token == "" {
		return false
	}
	ret := challenge.ReturnURL(uri)
	if path, query, _ := strings.Cut(uri, "?"); path == challenge.SolvePath {
		ret = "/"
		if sol, err := challenge.ParseSolution(query); err == nil {
			ret = sol.Return
		}
	}
	hd := w.Header()
	if p.solved {
		h.gate.SetCookie(hd, p.token, strings.EqualFold(r.Get("x-forwarded-proto"), "https"))
		hd.Set("Location", ret)
		w.WriteHeader(http.StatusSeeOther)
		return true
	}
	err := challenge.WritePage(w, http.StatusForbidden, challenge.Page{Challenge: p.token, Tier: p.tier, Difficulty: p.difficulty, Return: ret})
	if err != nil {
		h.log.Warn("decision: challenge page", "err", err)
	}
	return true
}

// Escalation makes the Gate's escalations block mitigations: a client that
// was shown too many challenges without passing, or sent a proof that does
// not hold, is blocked by address for For.
type Escalation struct {
	Store interface {
		Add(m mitigation.Mitigation, now time.Time) (mitigation.Mitigation, bool, error)
	}
	For time.Duration // 0 means one hour
	Log *slog.Logger  // nil: errors are not logged
}

// Escalate implements challenge.Escalator.
func (e *Escalation) Escalate(ev *characteristics.Event, rule string, reason challenge.Reason, now time.Time) {
	d := e.For
	if d <= 0 {
		d = time.Hour
	}
	name := "challenge_" + reason.String()
	if rule != "" {
		name += ": " + rule
	}
	m := mitigation.Mitigation{Rule: name, Action: mitigation.ActionBlock, Origin: mitigation.OriginAPI,
		Scope: mitigation.Scope{{Name: "ip.src", Value: ev.IP.Unmap().String()}}, Expires: now.Add(d)}
	if _, _, err := e.Store.Add(m, now); err != nil && e.Log != nil {
		e.Log.Warn("decision: challenge escalation", "err", err)
	}
}

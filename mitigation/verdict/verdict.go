package verdict

import (
	"math"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/throttle"
)

// Decision is the verdict on one request.
type Decision struct {
	Action mitigation.Action // ActionLog means allow
	Allow  bool
	Rule   string
	Retry  time.Duration // until the mitigation ends, or the throttle admits
	Limit  float64       // the rule's requests per window, for RateLimit-Policy
	Window time.Duration
	Shed   bool
	// Expires is when the deciding mitigation ends (zero for a throttle).
	Expires time.Time
	// Throttle is what the throttle rules said: when Matched on an allowed
	// request, its RateLimit headers go on the answer.
	Throttle throttle.Verdict
}

// Mitigation is one mitigation in force that covers a request, as a
// Request yields it.
type Mitigation struct {
	Action  mitigation.Action
	Rule    string
	Expires time.Time
	// Order breaks ties between actions of one rank: the lowest wins. A
	// rule's mitigation has its rule's index in the rule set; a mitigation
	// of no known rule (a manual one) orders after every rule.
	Order int
	// Limit and Window are the rule's requests per period (0: none).
	Limit  float64
	Window time.Duration
	// Fallback is, for a challenge, the action a request that is not a page
	// view gets instead (the rule's challenge_fallback).
	Fallback mitigation.Action
}

// Request is one request as the tables in force see it. Decide calls each
// method at most once per request, in the order the methods are listed,
// except Next, which it calls until it reports false, and stops early only
// after Allowlisted.
type Request interface {
	// Allowlisted reports whether the allowlist covers the request, whatever
	// the scope of the mitigations its keys would find.
	Allowlisted() bool
	// Count counts the request on the rules counted when it arrives.
	Count()
	// Throttle admits or refuses the request on the throttle rules.
	Throttle() throttle.Verdict
	// Next returns the next mitigation in force covering the request, false
	// when there is none left. A rule's mitigation covers a request only
	// where the rule's mitigation expression matches it. Mitigations with
	// ActionLog may be yielded: they apply and enforce nothing.
	Next() (Mitigation, bool)
	// Cleared reports whether the request carries a valid clearance (it
	// passed a challenge); asked only when a challenge covers it.
	Cleared() bool
	// PageView reports whether the request is a page view (see PageView);
	// asked only when a challenge covers it and it has no clearance.
	PageView() bool
}

// Clearances checks a request's clearance, the proof that its client passed
// a challenge, without a store lookup. nil clears nothing.
type Clearances interface {
	Cleared(ev *characteristics.Event, now time.Time) bool
}

// PageView reports whether ev may be shown a challenge page: a GET or HEAD
// without an Accept header, or with one that names text/html. Anything
// else (an API call, a webhook, a feed, an image) gets the challenge's
// fallback instead (DESIGN.md "Challenges").
func PageView(ev *characteristics.Event) bool {
	if ev.Method != "GET" && ev.Method != "HEAD" {
		return false
	}
	accept, ok := ev.Header("accept")
	return !ok || containsFold(accept, "text/html")
}

// containsFold reports whether s contains the lower-case ASCII sub,
// ignoring ASCII case, without allocating.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		j := 0
		for ; j < len(sub); j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != sub[j] {
				break
			}
		}
		if j == len(sub) {
			return true
		}
	}
	return false
}

// Decide is the verdict on r at now, the request's time.
func Decide(r Request, now time.Time) Decision {
	if r.Allowlisted() {
		// Never an action for an allowlisted client, whatever the scope
		// (country, ASN, user agent ...), and no request-time count.
		return Decision{Allow: true}
	}
	r.Count()
	tv := r.Throttle()
	best := Decision{Allow: true}
	var bestM Mitigation
	asked, cleared, page := false, false, false
	for {
		m, ok := r.Next()
		if !ok {
			break
		}
		if m.Action == mitigation.ActionChallenge {
			if !asked {
				asked, cleared = true, r.Cleared()
				page = !cleared && r.PageView()
			}
			if cleared {
				continue // the client passed a challenge: none applies
			}
			if !page {
				m.Action = m.Fallback
			}
		}
		if m.Action == mitigation.ActionLog {
			continue
		}
		if best.Allow || m.Action.Stronger(bestM.Action) || (!bestM.Action.Stronger(m.Action) && m.Order < bestM.Order) {
			bestM = m
			best = Decision{Action: m.Action, Rule: m.Rule, Expires: m.Expires, Retry: m.Expires.Sub(now), Limit: m.Limit, Window: m.Window}
		}
	}
	if tv.Shed && best.Allow {
		// The server protecting itself: a 503, unless a mitigation answers.
		best = Decision{Shed: true, Retry: tv.Retry}
	}
	if tv.Refused && (best.Allow || mitigation.ActionThrottle.Stronger(bestM.Action)) {
		r := tv.Rule
		best = Decision{Action: mitigation.ActionThrottle, Rule: r.Name, Retry: time.Duration(tv.RetrySeconds()) * time.Second,
			Limit: r.Requests, Window: r.Period}
		if r.Concurrency > 0 { // a policy of requests in flight: no window
			best.Limit, best.Window = float64(r.Concurrency), 0
		}
	}
	best.Throttle = tv
	return best
}

// NoRule is the Order of a mitigation of no known rule.
const NoRule = math.MaxInt

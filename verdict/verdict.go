package verdict

import (
	"math"
	"time"

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
	for {
		m, ok := r.Next()
		if !ok {
			break
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

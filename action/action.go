package action

import (
	"fmt"
	"strings"
)

// Action is what enforcement does to a request that matches a mitigation. Its
// String is a closed set, safe as a metric label.
type Action uint8

// Actions. The zero value is Log, which enforces nothing.
const (
	Log       Action = iota // record the match, let the request through
	Block                   // 403
	RateLimit               // 429 with Retry-After
	ShadowBan               // a plausible 200, request not served
	Firewall                // pushed to the firewall (nftables sets), also 403 at the decision API
	// Throttle is a rule's request-time limit: each request is
	// admitted or refused (429) against its key's budget when nginx asks.
	// It is never a mitigation record (see Action.Mitigates).
	Throttle
	// Challenge answers a page view with an interstitial that a
	// person's browser passes (and then carries a signed clearance) and a
	// script does not; a request that is not a page view gets the rule's
	// challenge fallback (DESIGN.md "Challenges").
	Challenge
	numActions
)

// Len is the number of actions: every valid Action is below it, so arrays
// indexed by Action (metrics per action) are [Len]T.
const Len = int(numActions)

var actionNames = [numActions]string{
	Log:       "log",
	Block:     "block",
	RateLimit: "rate_limit",
	ShadowBan: "shadowban",
	Firewall:  "firewall",
	Throttle:  "throttle",
	Challenge: "challenge",
}

// actionRank orders actions when several apply to one request: the highest
// rank wins, in Lookup and at the decision API. A denial beats a deception
// (block over shadowban: a client already refused gains nothing from the
// pretence), a deception beats a challenge (the client is known bad), a
// challenge beats a rate limit (a browser that passes it goes on, and only
// then meets the limit), a mitigation beats a request-time throttle (it
// lasts, the throttle's 429 only says "not now"), and any enforcement beats
// log.
var actionRank = [numActions]uint8{
	Log:       0,
	Throttle:  1,
	RateLimit: 1,
	Challenge: 2,
	ShadowBan: 3,
	Block:     4,
	Firewall:  5,
}

// Names returns the action names in the order error messages list them.
func Names() []string { return append([]string(nil), actionNames[:]...) }

// Stronger reports whether a outranks b when both apply to one request.
func (a Action) Stronger(b Action) bool { return a.rank() > b.rank() }

func (a Action) rank() uint8 {
	if a < numActions {
		return actionRank[a]
	}
	return 0
}

// Mitigates reports whether a can be a mitigation record (a rule's trip or
// a manual decision). Throttle cannot: it is decided per request.
func (a Action) Mitigates() bool { return a < numActions && a != Throttle }

// Parse reads an action name as written in a rule's metadata.
func Parse(s string) (Action, error) {
	for a, n := range actionNames {
		if s == n {
			return Action(a), nil
		}
	}
	return 0, fmt.Errorf("action: unknown action %q; expect %s", s, acceptedActions())
}

// Accepted lists the action names for an error message: "'log', 'block',
// ... or 'challenge'".
func Accepted() string { return acceptedActions() }

func acceptedActions() string {
	q := make([]string, len(actionNames))
	for i, n := range actionNames {
		q[i] = "'" + n + "'"
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// String returns the action's name, or "other" for a value outside the set.
func (a Action) String() string {
	if a < numActions {
		return actionNames[a]
	}
	return "other"
}

// Valid reports whether a is one of the defined actions.
func (a Action) Valid() bool { return a < numActions }

// MarshalText implements encoding.TextMarshaler.
func (a Action) MarshalText() ([]byte, error) {
	if !a.Valid() {
		return nil, fmt.Errorf("action: invalid action %d", uint8(a))
	}
	return []byte(actionNames[a]), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (a *Action) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

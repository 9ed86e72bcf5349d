package mitigation

import (
	"fmt"
	"strings"
)

// Action is what enforcement does to a request that matches a mitigation. Its
// String is a closed set, safe as a metric label.
type Action uint8

// Actions. The zero value is ActionLog, which enforces nothing.
const (
	ActionLog       Action = iota // record the match, let the request through
	ActionBlock                   // 403
	ActionRateLimit               // 429 with Retry-After
	ActionShadowBan               // a plausible 200, request not served
	ActionFirewall                // pushed to the firewall (nftables sets), also 403 at the decision API
	numActions
)

var actionNames = [numActions]string{
	ActionLog:       "log",
	ActionBlock:     "block",
	ActionRateLimit: "rate_limit",
	ActionShadowBan: "shadowban",
	ActionFirewall:  "firewall",
}

// actionRank orders actions when several mitigations cover one scope: the
// highest rank wins in Lookup. A denial beats a deception (block over
// shadowban: a client already refused gains nothing from the pretence), and any
// enforcement beats log.
var actionRank = [numActions]uint8{
	ActionLog:       0,
	ActionRateLimit: 1,
	ActionShadowBan: 2,
	ActionBlock:     3,
	ActionFirewall:  4,
}

// ParseAction reads an action name as written in a rule's metadata.
func ParseAction(s string) (Action, error) {
	for a, n := range actionNames {
		if s == n {
			return Action(a), nil
		}
	}
	return 0, fmt.Errorf("mitigation: unknown action %q; expect %s", s, acceptedActions())
}

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
		return nil, fmt.Errorf("mitigation: invalid action %d", uint8(a))
	}
	return []byte(actionNames[a]), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (a *Action) UnmarshalText(b []byte) error {
	v, err := ParseAction(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

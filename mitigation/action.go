package mitigation

import "github.com/guardd/guardd/action"

// Action is what enforcement does to a request that matches a mitigation:
// package action's closed set, which rules share without importing
// mitigation.
type Action = action.Action

// Actions, as package action names them. The zero value is ActionLog.
const (
	ActionLog       = action.Log
	ActionBlock     = action.Block
	ActionRateLimit = action.RateLimit
	ActionShadowBan = action.ShadowBan
	ActionFirewall  = action.Firewall
	ActionThrottle  = action.Throttle
	ActionChallenge = action.Challenge
)

// ParseAction reads an action name as written in a rule's metadata.
func ParseAction(s string) (Action, error) { return action.Parse(s) }

// Names returns the action names in the order error messages list them.
func Names() []string { return action.Names() }

// Package action holds Action, the closed set of what enforcement does to a
// request (log, block, rate_limit, shadowban, firewall, throttle,
// challenge), with the ranks that decide which applies when several do and
// the names rules and APIs write. It imports nothing of guardd: rules read
// it in their metadata, and mitigation, the decision API and the throttle
// limiter (which import rules) act on it, all importing it downward.
// mitigation keeps the names its callers use (mitigation.Action,
// mitigation.ActionBlock ...) as aliases of these.
package action

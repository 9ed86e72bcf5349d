// Package engine applies a rule set to events: it keys each matching event on
// the rule's characteristics, counts it in the rule's counter table, and
// reports a Trip whenever the counter goes over its limit. It keeps no record
// of mitigations: the mitigation store is the only one (package pipeline
// hands it the trips), so a flood of trips is bounded by the store's cap.
//
// Work is split in two so a replay can use every core and still be
// deterministic. Prepare is pure and runs on any goroutine: it evaluates the
// rules' expressions on one event and writes compact Matches (rule, key hash,
// key bytes, score). Apply is the only stateful step; it takes Matches in
// event order and counts them. Apply is safe for concurrent use (counters
// are sharded), which the decision API's request-time counting relies on,
// but only sequential calls give reproducible replays.
//
// The engine holds counters behind the small Counter interface, so a
// fleet-wide tier (Redis) can be slotted in per rule without touching rules.
package engine

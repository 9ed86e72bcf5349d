// Package engine applies a rule set to events: it keys each matching event on
// the rule's characteristics, counts it in the rule's counter table, trips the
// rule when the counter goes over its limit, and tracks the mitigation that a
// trip creates until it expires.
//
// Work is split in two so a replay can use every core and still be
// deterministic. Prepare is pure and runs on any goroutine: it evaluates the
// rules' expressions on one event and writes compact Matches (rule, key hash,
// key bytes, score). Apply is the only stateful step; it takes Matches in
// event order and does the counting, tripping and mitigation bookkeeping.
// Apply is safe for concurrent use (counters are sharded, the mitigation table
// is locked), which the live daemon relies on, but only sequential calls give
// reproducible replays.
//
// The engine holds counters behind the small Counter interface, so a
// fleet-wide tier (Redis) can be slotted in per rule without touching rules.
package engine

// Package replay runs a rule engine over access logs as fast as the machine
// allows, for `guardd replay`.
//
// One goroutine reads lines into batches; workers (one per core) parse,
// enrich, join fingerprints and evaluate the rules on their batches in
// parallel; a sequencer applies the prepared matches to the counters in the
// order of the input, so a replay's result does not depend on scheduling.
// Counting is driven by each line's own time, never the wall clock.
//
// Malformed lines are counted, reported with file and line number, and
// skipped. Files are read one after another, in the order given: give them
// oldest first, as logrotate numbers them in reverse.
package replay

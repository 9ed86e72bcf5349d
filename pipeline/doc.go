// Package pipeline holds guardd's per-event path, written once and used by
// both `guardd run` and `guardd replay`: parse a log line, enrich the event
// (trusted proxies, prefix, ASN, country), join sniffed fingerprints, evaluate
// the rules, count, and turn trips into mitigations in the store.
//
// Run reads lines from a Source into batches. Workers (one per core) parse,
// enrich, join and evaluate batches in parallel; a sequencer counts and trips
// them in input order, so a replay's result does not depend on scheduling,
// and the live daemon catches up on a backlog with every core as replay does.
// Counting runs on each event's own time, clamped to the wall clock (passed
// in per batch) plus a small tolerance: a line dated in the future must not
// make a year-long ban or sweep every counter away.
//
// Build makes a Pipeline from a configuration: the rule set, the engine, the
// log format and the enricher. A Holder keeps the current one and swaps it on
// reload; each Pipeline is reference-counted, so the enricher (and its
// MaxMind readers) is closed only when no batch, decision or count still uses
// it. The Holder is also the decision API's enricher, so a reload reaches
// request-time enrichment.
//
// The mitigation store is the only record of mitigations: the engine reports
// every trip, and the pipeline adds it to the store unless the rule already
// holds a mitigation there that this trip would not extend by a tenth of its
// timeout (one tripping path, for Run and RequestCounter). A replay uses an
// in-memory store and a Report, which keeps what `guardd replay` prints:
// every mitigation made, and per client what the mitigations in force did
// to its requests. Each request is judged by verdict.Decide, the decision
// API's own verdict, reading what the workers worked out (allowlist, page
// view, which rules' mitigation expressions matched on which keys) and the
// report's records of the mitigations in force; the report observes the
// verdicts and the trips. Given the throttle rules
// (Report.SimulateThrottle), a replay also admits or refuses each request
// they count with the decision API's limiter (mitigation/throttle): the
// workers work out the keys, the sequencer admits in input order on the
// event's time, so the refusals do not depend on scheduling either.
package pipeline

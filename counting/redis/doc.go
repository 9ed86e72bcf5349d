// Package redis is guardd's fleet-wide counting tier: several nodes enforce
// one budget per rule and key through Redis (standalone, Sentinel or
// Cluster), without a network round trip in front of a decision.
//
// # What it promises
//
//   - Counter.Add answers from memory: the key's global state as last read
//     back from Redis, advanced to now (windows roll, buckets refill), plus
//     this node's deltas not yet in it. It never waits on the network, so a
//     slow, blackholed or dead Redis adds nothing to a decision's latency.
//   - Fleet.Run flushes every node's deltas every FlushInterval (50 ms), and
//     at once when a key's delta uses up its lease: the key's remaining
//     headroom divided by the live nodes, in whole events, and paced with
//     peers: no more than the node would spend, at its rate, before the
//     key's budget runs out at the fleet's (scripts.go). Each flush is one atomic Lua
//     script per key (one EVALSHA, falling back to EVAL, however many events
//     the delta carries), pipelined; its reply is the new global state.
//   - One script per algorithm (sliding window counter, fixed window,
//     sliding log, token bucket, GCRA, all in Lua, no module), each touching
//     one key hash-tagged "guardd:{rule:key}", so Cluster is correct by
//     construction. Redis TIME is the one clock; the reset time is stored
//     with the key and returned, so every node computes the same Retry-After
//     and reset. TTLs are set once per window (PEXPIREAT NX on a new key,
//     GT when a window rolls), never by a GET-then-SET. Nothing is read from
//     a replica.
//   - Calls go through a circuit breaker per endpoint (the server, the
//     Sentinel master, or each Cluster master: a key's endpoint is the
//     master of its hash slot, from CLUSTER SLOTS) with a deadline per
//     pipeline (Deadline, 20 ms). Each endpoint's ops are sent
//     concurrently, under their own deadline, so a dead master neither
//     fails nor delays the others' flushes. Threshold consecutive failures
//     open an endpoint's breaker; after Cooldown a probe (its next
//     pipeline, the heartbeat, or a PING) goes through (half-open) and
//     closes it. While it is open each rule answers, for the keys on that
//     endpoint only, by its OnError: Open allows, Closed refuses,
//     Local (the default) judges this node's own counts, scaled by the
//     number of live nodes, against the budget. Deltas that could not be
//     sent stay pending; on recovery those whose window is still open are
//     flushed and older ones dropped (guardd_counting_redis_dropped_events_total).
//   - Distinct rules (DistinctCounter) count in the node's own
//     counting.Distinct and share its sketches: every FlushInterval the
//     sketches of each key's windows whose values changed here are merged
//     in Redis (one idempotent Lua script per key: a union of fingerprints,
//     a maximum of registers) and the merged ones read back, so a key's
//     answer is what one node that saw every node's values would give, a
//     flush interval late (docs/fleet.md "Distinct counts").
//
// # The error bound
//
// A node admits on a view that may lack the other nodes' last deltas. With
// N nodes, per-key event rate R (fleet-wide), flush interval F and round
// trip T, the over-admission of one key in one window is at most what the
// other nodes admit between their flushes, bounded by the lease: each node
// flushes as soon as its delta reaches headroom/N, so past the limit the
// fleet admits at most min(R*(F+T), N*lease) = min(R*(F+T), headroom) more,
// and as the headroom shrinks the leases shrink with it, so the excess is
// about R*T (events that arrive during one round trip) near the limit.
// docs/fleet.md derives it and BENCHMARKS.md measures it.
//
// A node alone in the fleet keeps a token_bucket or gcra key's events to
// itself while they stay within the cold allowance (Config.ColdShare of
// the bucket, at least one event), until the bucket has refilled them: a
// client under its rate costs no script (Counter.quietLocked). They are
// sent as soon as the node hears of another one.
//
// # What it gives up
//
//   - A delta that timed out may have been applied by Redis all the same;
//     it is sent again, so an unreliable link over-counts (errs towards
//     limiting), never under-counts.
//   - A Cluster with one master down degrades only that master's keys if
//     the cluster keeps serving the other slots (cluster-require-full-coverage
//     no); with the default, every master refuses and every breaker opens.
//   - The sliding log is exact per flush, not per event: a flush adds one
//     log entry carrying its whole delta, at Redis time.
//   - An event flushed just after its window closed counts in the next
//     window (sliding) or is dropped (fixed).
package redis

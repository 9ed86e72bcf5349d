// Package throttle holds guardd's request-time limits: rules with
// `action: throttle`, each request admitted or refused against its key's
// budget when nginx asks (the decision API), as nginx limit_req, Envoy's
// rate limit service or Stripe's request limiter do, rather than a rule
// tripping and a mitigation following.
//
// # What it promises
//
//   - Every throttle rule whose count expression holds judges the request on
//     its key (the hash of its characteristic values) in its own Counter,
//     under its algorithm (sliding window, fixed window, sliding log, token
//     bucket, GCRA; burst for the last two). The most restrictive rule
//     decides: of the rules that refuse, the one with the longest wait; if
//     none refuses, the one with the least remaining, whose policy the
//     allowed response reports.
//   - Retry-After is the algorithm's own wait (counting.Result.RetryAfter)
//     rounded up to whole seconds, never down, plus a random extra in
//     [0, retry_jitter] when the rule sets one.
//   - RateLimit and RateLimit-Policy field values as
//     draft-ietf-httpapi-ratelimit-headers-11 (May 2026) writes them, the
//     syntax unchanged since -08: `RateLimit-Policy: "<rule>";q=<requests>;w=<period s>`
//     and `RateLimit: "<rule>";r=<remaining>;t=<seconds>`.
//   - Shadow mode, per rule (shadow: true) or for all (Config.Shadow):
//     counted and decided, never enforced; what would have been refused is
//     counted in guardd_throttle_requests_total{outcome="shadow_refused"}
//     and logged (at most once a second per rule).
//   - Rules.Decide allocates nothing once its buffer and the counters have
//     grown; a Counter must not block on the network.
//
// # The counting API
//
// Counter is the one method Decide calls, Admit(key, n, now) counting.Result,
// and NewCounter makes one per rule: a fleet-wide tier (local counts plus
// deltas flushed to Redis, global totals read back) slots in behind it with
// Config.NewCounter, without touching the decision path. Keys are XXH64
// hashes of the characteristic values, the same on every node; time is the
// caller's.
//
// # What it gives up
//
// A refused request is not counted (counting.Table.Admit), under every
// algorithm: a client sending at twice its limit gets its limit admitted,
// not nothing. Every matching rule counts the request it admits even when
// another rule refuses it, so a request refused by one rule still uses the
// budget of the others. Counts are per process unless Config.NewCounter says otherwise, and a
// reload keeps a rule's counts only while its name and limit are unchanged.
package throttle

// Package counting holds guardd's rate counters: per rule, a Table of
// counters keyed on the hash of the characteristic values an event carries
// (its ip.src, its JA4, its cookie ...), driven by event time.
//
// # What it promises
//
// A Table applies one Limit (Requests per Period) with one Algorithm:
//
//   - SlidingWindow, the default: Cloudflare's sliding window counter. It keeps
//     the counts of the current and the previous aligned window and estimates
//     the rate at time now as
//     prev*(period-elapsed)/period + curr, elapsed being the time since the
//     current window began. Constant memory per key; the estimate assumes
//     the previous window's events were spread evenly, so bursts that end at
//     a window boundary are over- or under-counted for one period.
//     TestAccuracy measures the cost against an exact log
//     (bench/counting.md).
//   - FixedWindow: one count per aligned period.
//   - SlidingLog: exact, for small limits. Each key keeps at most
//     ceil(Requests)+1 event times (12 bytes each; Requests is capped at
//     MaxLogRequests). When the log is full its oldest entry is merged into
//     the next, which can only over-count: with events of size >= 1 every
//     decision stays exact, and with smaller sizes decisions err towards
//     limiting.
//   - TokenBucket: capacity Burst (default Requests), refilled at Requests
//     per Period.
//   - GCRA: emission interval Period/Requests, burst Burst (default
//     Requests). It makes the
//     same decisions as TokenBucket (up to rounding) from one integer time,
//     the theoretical arrival time, with no floating-point refill.
//
// Two more kinds of table serve rules with more than one limit or that
// count values rather than events:
//
//   - Distinct counts, per key, the distinct values of a second
//     characteristic (distinct paths per address): 32 exact 32-bit
//     fingerprints per window, then 128 HyperLogLog registers, sliding over
//     the current and previous window like SlidingWindow. Bounded memory
//     per key: a 64-byte slot (DistinctSlotBytes) holds up to four values
//     per window, and a key with more takes a 256-byte block
//     (DistinctBlockBytes) until its windows rotate down to four; at most
//     356 bytes per key at the cap (its slot at two-thirds load, a block,
//     a free-list entry), an eighth of Table's key cap, with the
//     same sampled eviction. 0 allocations per Add once the shard's slots
//     and blocks have grown. Exact up to 32 values; about 7% mean error
//     beyond (TestDistinctAccuracy).
//   - Windows applies several limits (5 minutes and 1 hour, say) to the same
//     keys, one Table or Distinct per limit; an event that exceeds any of
//     them is Exceeded.
//   - Regularity keeps, per key, a ring of the last 32 intervals between
//     events (RegularitySlotBytes, 152 bytes) and judges, when asked, whether
//     they are machine-regular: a trimmed coefficient of variation, corrected
//     for one-second timestamps (IntervalCV). A rule's regularity: gate.
//
// With Add, the window algorithms count every event, including those over
// the limit: a client that keeps sending stays limited, as a detector should
// see it. TokenBucket and GCRA only consume on a conforming event, as a
// shaper does. Admit, for an enforcement point (a throttle), records an
// event under every algorithm only when it fits under the limit.
//
// Result gives what an enforcement point needs: whether this event went
// over, what is left, RetryAfter (the algorithm's own arithmetic for when an
// event of the same size would next be allowed, for a 429 Retry-After) and
// Reset (when usage is back to zero, for the IETF RateLimit header).
//
// Time is the event's time in unix nanoseconds, passed by the caller; the
// package never reads a clock, so a replay of old logs counts as the live
// daemon would have.
//
// # Late events
//
// Events arrive a little out of order (log lines from several workers,
// sniffed requests joined late). None corrupts state:
//
//   - SlidingWindow: an event of the previous window is added to the
//     previous count; the key is judged at the start of its current window.
//     An older event is ignored.
//   - FixedWindow: an event before the key's current window is ignored.
//   - SlidingLog: a late event still inside the period (measured from the
//     key's newest event) is inserted in time order; an older one is ignored.
//   - TokenBucket: a late event is judged at the last refill (tokens are
//     never given back). GCRA: it is judged at its own time against a
//     theoretical arrival time that never moves back, which can only make
//     it stricter.
//
// Table.Late counts the ignored events.
//
// # Memory
//
// A key costs one 32-byte slot in an open-addressing table grown by half
// whenever it passes 80% load, and two-thirds full at the cap (40 to 60 bytes
// per key while growing, 48 at the cap; bench/counting.md), plus its log for
// SlidingLog. The same state in a Go map costs about twice that, and more
// time per Add (measured there too). Keys idle for more than
// two periods are dropped by Sweep, and lazily when touched or sampled.
// MaxKeys is a hard cap: each of the shards holds MaxKeys/Shards keys, and a
// full shard makes room by sampling eight keys and evicting an idle one or
// else the one with the least current usage (sampled LFU). A flood of
// distinct keys, each seen once, therefore evicts itself and leaves the heavy
// keys, the ones rules care about, with their counts intact (TestFlood). An
// evicted key starts again from zero when it returns: the table errs towards
// allowing a light key, never towards blaming a new one for an old count.
//
// Keys are the caller's 64-bit hashes: use Hash (XXH64), which is the same
// on every machine. Two values whose hashes collide share a counter.
//
// # Concurrency and cost
//
// A Table is safe for concurrent use: a key's shard is picked from its hash,
// and each shard has its own mutex. Add and Peek allocate nothing once a
// shard has grown to hold its keys; an Add costs one cache miss on a large
// table.
//
// Table, Distinct, Regularity and counting/redis's Counter share one table,
// Sharded: the probing, growth, deletion, sampled eviction and sweeps are
// written once, generic over what a slot holds beside its key, and each
// keeps its own slot layout and bytes per key. What a key's state means and
// which key a full shard evicts stay with each of them.
//
// # A fleet-wide tier (not built yet)
//
// The rule engine declares the small interface it calls, for example
//
//	type Counter interface {
//		Add(key uint64, n float64, now int64) counting.Result
//	}
//
// so that fleet-wide counts can be added later as another implementation
// without touching the rules. That tier would wrap a local Table and never
// put a network round trip in front of an event:
//
//   - Add answers from the local Table plus the last known remote total for
//     the key's window (kept in a small side map, or in the slot), so its
//     cost stays that of a local Add.
//   - Local increments are aggregated per (rule, key, window) and flushed
//     asynchronously every few hundred milliseconds, or when a batch fills,
//     as pipelined INCRBYFLOAT plus EXPIRE of two periods (or one Lua script
//     per batch) on keys hash-tagged by rule and key, e.g.
//     "guardd:{rule:hash}:window", so a key's windows live on one Redis
//     Cluster slot. The sliding window counter needs only the current and
//     previous window totals, so the remote state is two integers per key.
//   - The same round trip reads back the global totals of the flushed keys;
//     the local estimate becomes local-unflushed + global. Keys whose global
//     total is near the limit can be refreshed more often.
//   - Redis is reached behind a deadline and a circuit breaker; when it is
//     down the tier degrades to local counts (fail-open, counted in a
//     metric), and flush batches are dropped rather than queued without
//     bound.
//
// Because Hash is XXH64 and windows are aligned on unix time, every instance
// derives the same remote key for the same characteristic values.
//
// # What it gives up
//
// The sliding window counter approximates; exact decisions need SlidingLog
// and its memory. Counts are per process until the remote tier exists. The
// table forgets an evicted or expired key entirely. RetryAfter assumes no
// further events arrive, and for the window algorithms (which count refused
// events too) a client that keeps sending pushes its own retry time back.
package counting

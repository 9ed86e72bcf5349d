// Package mitigation holds the authoritative table of active mitigations: what
// scope (ordered characteristic values such as {ip.src: 203.0.113.7} or
// {http.cookies["session"]: abc, http.path: /login}) gets which Action, from
// which rule, until when.
//
// # What it promises
//
//   - Lookup by scope key (Scope.Key, or a Hasher fed from an event) is
//     allocation-free and runs concurrently with writers: 64 shards, each a
//     map behind a sync.RWMutex, written only by the single writer that holds
//     the store lock. See bench/mitigation.md for figures.
//   - Every Add is either held in the table or refused (allowlisted, invalid):
//     nothing is dropped silently. The table is capped (Config.MaxEntries);
//     when full, the mitigation nearest to expiry is evicted and counted in
//     guardd_mitigation_evictions_total.
//   - The allowlist wins: a scope whose address lies in, or whose prefix
//     overlaps, an allowlisted network, or that holds an allowlisted value, is
//     never mitigated (see Allowlist); and Allowlisted tells an enforcement
//     point that a request's client must receive no action at all, whatever
//     the scope of the mitigations it meets (country, ASN, user agent ...).
//     SetAllowlist replaces the allowlist and drops what the new one covers.
//   - An ip.src.prefix scope of any length, IPv4 or IPv6, covers every
//     address inside it: Shapes lists one shape per prefix length in use, and
//     its Key masks the request's address to that length.
//   - With Config.StateDir, active mitigations survive a restart and a crash
//     of the process (kill -9): each change is appended to a JSON-lines
//     journal with one write(2) when it happens, fsynced every 100 ms by Run
//     and on Close, and compacted into a snapshot written atomically (temp
//     file, fsync, rename, directory fsync). Expiry is absolute wall-clock
//     time, so a restored mitigation keeps its remaining time. A truncated last
//     journal record is skipped with a warning. Any other damage does not keep
//     guardd down: the damaged lines are skipped, the rest is restored, the
//     file is renamed to <name>.corrupt, and the damage is logged at error
//     level with file, line and byte offset and counted in
//     guardd_mitigation_state_files_set_aside_total. State written by another
//     state version fails New instead (a downgrade must not lose it).
//   - Changes is a feed for enforcement points (firewall sets, the CrowdSec
//     decision stream, peers): from a cursor, the mitigations added or
//     modified and those deleted, evicted or expired, coalesced per ID. A
//     cursor too old for the retained history (Config.History), or from before
//     a restart, reports ok=false and the consumer resyncs from Snapshot.
//   - Shapes lists the characteristic name lists in use, so an enforcement
//     point knows which keys to compute for a request.
//
// # What it gives up
//
//   - Keys are 64-bit xxhash values of the canonical scope bytes, unseeded so
//     that they are stable across processes. Two scopes with one key would
//     share a mitigation; by chance that is negligible, and forcing it needs an
//     xxhash64 second preimage of a victim's scope value.
//   - Memory before a pointer chase: a mitigation is one 80-byte node that the
//     shard map, the writer's indexes and the change feed share, with its
//     scope, interned names, rule and origin, and packed times. 100,000 ip.src
//     mitigations cost about 200 bytes each of live heap, against 560 with
//     128-byte cells held inline in the shard maps and copied for the writer
//     and the feed (BenchmarkMemoryPerMitigation, BENCHMARKS.md). A lookup
//     hit follows one pointer from the map; a miss, the common case, is a
//     probe of a smaller map.
//   - Writers are serialised by one mutex. Mitigations are created when a rule
//     trips, orders of magnitude less often than they are looked up.
//   - Expired mitigations are hidden from Lookup at once but freed, and fed as
//     deleted, only by Expire (Run calls it every 100 ms) or the next Add.
//   - A power failure may lose the last 100 ms of changes; a failure to write
//     the journal is logged and counted (guardd_mitigation_journal_errors_total)
//     while the mitigation stays enforced in memory.
//   - No ristretto (or other admission-controlled cache) holds or fronts the
//     table: ristretto may drop a Set, which must never lose a ban, and as a
//     positive cache in front it costs more than the table it would spare
//     (bench/mitigation.md, 100,000 entries: a ristretto hit is 884
//     instructions and 7.3 L1 misses against 316 and 4.5 for Lookup, and every
//     miss, the common case, pays ristretto and then the table: 1,064 against
//     314). Lookup is 225-316 instructions, 0 allocations, at 1,000 and
//     100,000 entries.
//
// Adding the same scope and rule again extends the mitigation (the later
// expiry wins, the action is replaced) and keeps its ID; several rules on one
// scope are separate mitigations, and Lookup returns the strongest action.
package mitigation

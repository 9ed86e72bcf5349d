// Package fleet propagates mitigations between guardd nodes through Redis:
// a mitigation one node creates, extends or deletes (a rule's, or a manual
// decision made through the admin API) is enforced by every node within
// 100 ms, and a node that starts loads the active set.
//
// # What it promises
//
//   - Sync watches the local mitigation.Store's change feed (Changes, polled
//     every Poll, 5 ms by default) and publishes each change with one
//     atomic script: the active set (a hash and an expiry index) is updated
//     and the change appended to a Redis Stream, all keys tagged
//     "{mitigations}" so a Cluster keeps them on one slot.
//   - Every node reads the stream with a blocking XREAD from the last ID it
//     saw, so a reconnect, a failover or a Redis restart loses nothing that
//     Redis kept; a node that starts first reads the active set and the
//     stream's last ID in one script, so nothing published in between is
//     missed either.
//   - A mitigation is identified across nodes by its scope key and rule
//     ("<scope key hex>/<rule>"): local IDs differ. Applying a remote change
//     is an ordinary Store.Add (extend, change action) or Store.Delete, so
//     the allowlist still wins on every node, and it is not published back.
//   - Natural expiry is not published: every node expires a mitigation by
//     its absolute expiry.
//   - Publishing never blocks the store: while Redis is unreachable the
//     latest change per mitigation is kept (at most MaxPending) and sent on
//     recovery.
//
// # What it gives up
//
//   - The stream is capped at about counting/redis.StreamMaxLen entries; a
//     node disconnected for longer than that many changes misses some until
//     it restarts and reloads the active set.
//   - The active set lives in Redis: without persistence (AOF) a Redis
//     restart empties it, and nodes started afterwards load only what was
//     published since. Running nodes keep their own copies either way.
//   - An eviction (the local table full) is published as a delete.
package fleet

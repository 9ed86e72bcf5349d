// Package nftables pushes the address and prefix mitigations of a
// mitigation.Store into nftables sets, where the kernel drops a banned
// client's packets before they reach a socket.
//
// A Pusher owns one table (default "inet guardd") holding four timed sets,
// v4 and v6 (hash sets of single addresses) and v4net and v6net (interval
// sets of prefixes), and, unless Config.SetsOnly, one base chain per hook
// (input by default) with a counted drop rule per set:
//
//	ip saddr @v4 counter drop
//	ip saddr @v4net counter drop
//	ip6 saddr @v6 counter drop
//	ip6 saddr @v6net counter drop
//
// It talks to the kernel over netlink (github.com/google/nftables); the nft
// binary is not needed.
//
// # What it promises
//
//   - Only mitigations whose scope is one ip.src or ip.src.prefix pair, with
//     an action listed in Config.Actions (default firewall), are pushed. A
//     single IPv6 address is banned as its /64 by default (Config.IPv6Bits),
//     or alone when that /64 overlaps Config.Allowlist.
//   - Every element carries the remaining time of its mitigation as its
//     timeout (rounded up to the second), so the kernel expires it even if
//     guardd is stopped. Deleted mitigations are deleted from the set.
//   - Overlapping prefixes never reach the kernel (where one overlap fails the
//     whole batch with "file exists"): the prefixes of a family are flattened
//     into disjoint ranges, each carrying the latest expiry of the prefixes
//     covering it, and adjacent ranges of one expiry are merged. An address
//     covered by a range that lasts at least as long is left out of the
//     address set.
//   - Changes are sent in batches of Config.BatchElements elements (one
//     netlink batch is one transaction). A batch the kernel refuses is split
//     in halves until the bad elements are isolated: the good ones are
//     applied, each bad one is logged and counted in
//     guardd_nftables_push_errors_total.
//   - The kernel is reconciled with the store at start, every
//     Config.ReconcileInterval, and after a push failed for want of the table
//     or a set: the table, sets, chains and rules are recreated when missing
//     or altered, the kernel's elements are read back, the missing added and
//     the extra deleted (elements guardd did not add included: guardd owns
//     its sets).
//
// # What it gives up
//
//   - Between two reconciles, changes made to the sets behind guardd's back
//     (nft flush set, nft delete element) are not seen; the next reconcile
//     repairs them.
//   - A change that rewrites ranges (a prefix nested in another expires or
//     is deleted) is sent as deletions followed by additions; when that spans
//     several batches, the range is unblocked for the time between them
//     (about a millisecond).
//   - The desired sets are recomputed from all pushable mitigations whenever
//     one changes: O(n log n) per poll with changes (see bench/nftables.md),
//     nothing when idle.
//   - Reading the kernel back is the costly part of a reconcile: about 1.5 s
//     for 100,000 addresses and 15 s for 100,000 ranges (the kernel's dump of
//     an interval set is quadratic), hence a 5-minute default. A hash set
//     dumped while the kernel resizes it misses elements; the reconcile then
//     re-adds them (a no-op in the kernel) and counts a repair.
//   - A refused element is retried at the next reconcile, not at every poll.
//   - Close leaves the table and its elements in the kernel: bans stay
//     enforced across a restart and expire on their own.
package nftables

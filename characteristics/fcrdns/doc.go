// Package fcrdns verifies crawlers by forward-confirmed reverse DNS, as
// Google, Bing, Yandex, Baidu, Apple and the others document it: the PTR
// name of the address must end in one of the crawler's domains, and that
// name's A or AAAA records must hold the address again.
//
// A Verifier answers Check at once from its cache and never waits on the
// network: an address it has not seen is Pending while a worker looks it up
// in the background. It promises bounded memory (at most MaxEntries
// addresses; a full cache forgets an arbitrary entry for a new one), a
// bounded query rate (QPS lookups a second, whatever the number of distinct
// addresses asking) and a bounded queue (lookups that do not fit are not
// queued; the address stays Pending and is asked again after RetryTTL).
// Verdicts are cached: verified ones for TTL, failed ones for NegativeTTL,
// unanswered ones (timeout, SERVFAIL, a full queue) for RetryTTL.
// Workers start on the first Check and stop on Close. It is safe for
// concurrent use.
package fcrdns

// Package crowdsec serves the part of CrowdSec's Local API that bouncers
// use, from guardd's mitigation table, so existing bouncers (firewall
// bouncer for nftables, iptables and pf; nginx, Traefik, HAProxy,
// Cloudflare) enforce guardd's decisions unchanged.
//
// # What it promises
//
//   - GET /v1/decisions/stream answers in CrowdSec's shape ({"deleted":[...],
//     "new":[...]}, null for an empty list, members duration, id, origin,
//     scenario, scope, type, value). startup=true sends every active
//     decision; later polls send what changed since that bouncer's previous
//     poll, per bouncer key. The query parameters the bouncers send are
//     honoured: scopes (ip, range; default Config.Scopes), origins,
//     scenarios_containing, scenarios_not_containing.
//   - One decision per value: when several mitigations cover one address or
//     range, a bouncer holds the strongest (ban over captcha, then the later
//     expiry), and learns of a change of winner as deleted-then-new. So
//     deleting one of two bans never unbans a client the other still covers,
//     and an extended ban re-enters firewall sets with its new timeout.
//   - The server follows mitigation.Store's change feed; when the feed no
//     longer reaches its cursor it rebuilds from a snapshot, and each bouncer
//     then gets the difference between what it was told and what is active:
//     deleted for the first, new for the second, nothing twice.
//   - GET /v1/decisions?ip=|range=|scope=&value= (contains=true by default)
//     answers the live-mode bouncers: an address inside a banned range
//     matches. It costs at most one map lookup per range length in use.
//   - Keys: only SHA-256 hashes are stored, in a 0600 JSON file updated
//     atomically under a lock (AddBouncer, DeleteBouncer); the server rereads
//     it when it changes. A missing or unknown X-Api-Key gets 403, as from
//     CrowdSec.
//
// # Mapping
//
// ip.src scopes are "Ip" decisions, ip.src.prefix scopes "Range" decisions;
// other scopes, and scopes of several pairs, are not shown (a ban of the
// address of an {ip.src, http.path} mitigation would refuse the client
// everywhere). block and firewall are "ban"; rate_limit is "captcha" (humans
// pass, scripts do not; the firewall bouncer ignores it, the nginx, Traefik
// and HAProxy bouncers show a captcha); shadowban and log are not shown. The
// mapping is configurable (Config.Types). Origins are written in CrowdSec's
// words: a rule's mitigation is "crowdsec", an operator's "cscli"; the
// origins filter also accepts guardd's own ("rule", "manual", "api").
// scenario is the rule name, id the mitigation ID.
//
// # What it gives up
//
//   - Per-bouncer state (what each bouncer holds) lives in memory only. After
//     a guardd restart a bouncer that polls without startup=true gets every
//     active decision as new; what was deleted while guardd was down leaves
//     its sets only when the duration it was given runs out.
//   - One mutex serialises answers: a bouncer's startup over 100,000
//     decisions (about 0.2 s of CPU, bench/crowdsec.md) delays the other
//     bouncers' polls by as much.
//   - Bouncers sharing one key share one state: register one key per bouncer
//     instance.
//   - No machine (watcher) API, no alerts, no decisions pushed by bouncers,
//     no TLS client certificates: serve it on loopback or behind a TLS proxy.
//   - Expiry reaches bouncers as deleted when the store's Expire feeds it
//     (every 100 ms in Store.Run); until then an expired decision is only
//     withheld from new answers. Bouncers also expire what they hold by the
//     duration they were given.
//   - Each bouncer costs memory for what it holds: about 100 bytes per
//     value shown (some 10 MB for 100,000 decisions).
package crowdsec

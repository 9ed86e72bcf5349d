// Package blocklist publishes guardd's IP and network mitigations in the
// forms other enforcement points import: plain-text feeds over HTTP for
// firewalls (pfSense/OPNsense URL tables, FortiGate threat feeds, Palo
// Alto external dynamic lists), and an nginx geo file kept on disk.
//
// # What it promises
//
//   - Only mitigations whose scope is one ip.src or one ip.src.prefix pair
//     are listed, and only those of the configured actions (default block
//     and firewall). Addresses are unmapped (::ffff:192.0.2.1 is 192.0.2.1),
//     networks masked; lists are sorted (IPv4, then IPv6, by address),
//     without duplicates and without entries inside another listed network.
//     A host is written bare (192.0.2.1), a network as CIDR.
//   - Handler serves .../ipv4.txt, .../ipv6.txt and .../all.txt wherever it
//     is mounted, one entry per line, with a strong ETag (a hash of the
//     body), Last-Modified (when that body first appeared), Cache-Control
//     no-cache, and 304 for If-None-Match or If-Modified-Since. The bodies
//     are built once per change of the table (the store's change feed) and
//     served from memory in between.
//   - Geo rewrites its file only when the listed set changes, atomically
//     (temp file, fsync, rename, directory fsync): nginx never reads a
//     partial file. The reload command runs at most once per
//     ReloadInterval, always after the last change, and its exit status is
//     logged and counted.
//
// # What it gives up
//
//   - Feeds are rebuilt whole from a snapshot on each change: the sort costs
//     O(n log n) per change, which firewalls polling every minutes or so
//     never notice.
//   - Feeds need no key: mount the Handler on a listener only the firewalls
//     reach, or behind a proxy with authentication.
//   - Expired mitigations leave the lists when the store feeds their expiry
//     (every 100 ms under Store.Run); Geo sees changes every PollInterval.
//   - An nginx reload is the operator's command: the package does not check
//     that nginx accepted the file (run `nginx -t` in the command, e.g.
//     ["sh", "-c", "nginx -t && nginx -s reload"]).
package blocklist

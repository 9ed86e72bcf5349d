// Package challenge is guardd's answer to uncertainty (DESIGN.md
// "Challenges"): a page that a person's browser passes in a moment and a
// script does not, and the signed clearance the browser then carries.
//
// What it promises:
//
//   - Keys. A Keyring of HMAC-SHA256 keys, read from a file (by default in
//     mitigation.state_dir) that LoadKeyring creates mode 0600 from
//     crypto/rand on first start and refuses when the group or others can
//     read it. The file can be copied to every node of a fleet. The first
//     key signs; a second is still accepted, so RotateKeyFile rotates with
//     overlap: tokens of the previous key stay valid until they expire.
//   - Clearance. A versioned token (base64url of a payload and its HMAC)
//     naming its key, binding the client's network (/24 for IPv4, /64 for
//     IPv6), a hash of its User-Agent, an expiry and, when one was joined,
//     its JA4. Gate.Cleared checks it with the time passed in, comparing
//     MACs and hashes in constant time, without allocating and without a
//     store lookup: another network, another User-Agent, one changed byte,
//     an expired token or an unknown key id is not cleared. The cookie is
//     HttpOnly, SameSite=Lax, Path=/ and Secure when the request came over
//     HTTPS (Gate.SetCookie).
//   - Proof of work. A challenge is itself a signed token binding the
//     network, User-Agent, issue time, tier, difficulty, rule and a hash of
//     the return URL, so the solve endpoint keeps no state; it can be
//     solved for Config.ChallengeTTL. The page's JavaScript finds a counter
//     n such that SHA-256(challenge + n) has the difficulty's leading zero
//     bits. The cookie tier (a rule's challenge_tier: cookie) asks no work:
//     a meta refresh to the signed challenge sets the clearance, proving only
//     that the client follows it and keeps cookies.
//   - Page. WritePage writes an accessible HTML page (language, title, a
//     status live region, a <noscript> explanation, nothing said by colour
//     alone) with a pure-JavaScript SHA-256, since crypto.subtle exists only
//     in secure contexts.
//   - Sharing. A clearance presented from more than Config.ShareAddresses
//     distinct addresses (counted whether or not its network binding holds
//     there) is revoked: its users are challenged again. A clearance carries
//     a hash of the address it was issued to; that address's own
//     presentations are not counted.
//   - Escalation. An address shown Config.MaxUnsolved challenges without
//     passing one, or sending a proof of work that does not hold, is handed
//     to the caller's Escalator (the daemon blocks it). A challenge that is
//     only expired or from another network fails without escalation: a tab
//     left open, a phone that changed networks.
//   - Metrics guardd_challenge_shown_total{rule}, _passed_total{rule},
//     _failed_total{rule,reason} (Reason is a closed set; rules outside
//     the loaded set are "other") and _clearances_checked_total{outcome}.
//     Tokens and cookies are never logged nor used as labels.
//
// What it gives up: the per-clearance sharing table and the per-address
// escalation table are bounded (Config.TrackerSlots, direct-mapped): under
// more live clearances than slots, a newer clearance takes an older one's
// slot and its count starts again (a revoked clearance keeps its slot until
// it expires). Both tables are per node; a fleet shares keys, not these
// counts. A clearance keeps a 64-bit xxHash of the User-Agent (checked on
// every covered request, under the MAC, so it needs no collision
// resistance); a challenge keeps SHA-256 of its first 1024 bytes and length.
// A proof of work costs a script as much as a browser: it prices abuse, it
// does not tell people from machines; the other rules still count what a
// cleared client does.
package challenge

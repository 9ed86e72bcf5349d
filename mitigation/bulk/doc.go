// Package bulk moves many mitigations at once: it reads and writes them as
// JSON lines, CSV, or a plain list of addresses and CIDRs (like
// `cscli decisions import`), and serves the admin API's bulk import.
//
// Reading is all-or-nothing: the first bad record fails the whole file with
// its line number, so a half-imported list never enforces. Records name their
// scope either as a JSON object ({"ip.src":"203.0.113.7"}, the form guardd
// writes) or as a single value, which is an ip.src address or an
// ip.src.prefix CIDR unless a characteristic is given. Expiry comes from the
// record (expires, an RFC 3339 time, or duration, a Go duration) or else from
// the defaults the caller passes; so does the action and the rule name.
//
// What bulk gives up: a record's id, created and origin (written on export)
// are not restored; an imported mitigation gets a new ID and origin "api".
package bulk

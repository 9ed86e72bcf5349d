// Package loggen writes synthetic, labelled nginx access logs: benign browsing
// from thousands of IPv4 and IPv6 clients, plus one campaign for each attack
// the built-in rule library targets. The labels say which rule must catch
// which scope, and which clients, fingerprints, cookies and networks are
// benign, so a test can check a replay finds every attacker and no one else.
//
// Output is deterministic for a given Config. It lives under bench/ because it
// is a tool for tests and benchmarks, not part of the product: nothing guardd
// ships imports it.
package loggen

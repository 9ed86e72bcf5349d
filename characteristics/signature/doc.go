// Package signature recognises attack payloads in request fields: a
// multi-pattern automaton (Aho-Corasick, ASCII case folded) over a fixed
// table of fragments sorted into classes (traversal, lfi, cmdi, log4shell,
// java_injection, php_injection, shellshock, ssrf_metadata, webshell,
// cve_probe, ...), and SQL injection and XSS through libinjection.
//
// Besides the fragments, Scan looks back a few bytes at each '<', '=',
// '[', '(' and '$' for the code shapes attackers pad or split (calls with
// spaces or comments before '(', spaced-out tags, event handlers, shell
// globs). ScanQuery and ScanQueryText read a raw query argument by
// argument, decoded, and keep apart the free-text ones (a search box, a
// dashboard's query language), where the same fragments occur in honest
// use; ScanQuery also judges the query's shape (encoding_evasion,
// invalid_utf8, overflow).
//
// What it promises: Scan reads a string once, whatever the number of
// patterns and classes, and returns every class found as a Mask; it, and
// ScanQuery, allocate nothing. SQLi and XSS run libinjection only on values with a
// byte an injection needs (a quote, a parenthesis, '<', ...), so ordinary
// text ("select dining chairs") costs a byte scan and is never flagged.
//
// What it gives up: the patterns are fragments, not a grammar; an attacker
// who spells a payload in a way no fragment covers passes. The table is
// compiled into the binary; rules choose which classes and fields to act on.
package signature

// Package bots knows two things about clients that are not in a request:
// which address ranges the major crawlers publish for themselves, and which
// TLS stacks (JA4 fingerprints) belong to which client software.
//
// Crawlers answers "this user agent says Googlebot: is the address really
// Google's?". Search engines and AI crawlers publish the networks they crawl
// from (Google's googlebot.json, Bing's bingbot.json, Apple's applebot.json,
// Meta's AS32934 routes, ...); the embedded table (crawlers.txt) holds them
// as of its date and a file in the same format replaces it
// (characteristics.crawler_ranges). A user agent that names a crawler from
// outside its ranges is a fake crawler; one from inside is verified and the
// built-in rules never count it.
//
// Stacks answers "which software made this TLS ClientHello?". The embedded
// table (tls_clients.txt) was built from captures made with the clients
// themselves (curl, Python's urllib and requests, Go's net/http, Chromium
// headless; see docs/fingerprinting.md), and a file in the same format
// replaces it (characteristics.tls_clients). A user agent that claims a
// browser over a scripting library's TLS stack is a bot whatever address it
// uses.
//
// Both file formats are line-oriented text, parsed with errors naming
// file:line; both parsers are fuzzed. Lookups allocate nothing. Finding the
// crawler a user agent names scans all of it; a Memo (one per goroutine, as
// each log pipeline worker keeps) remembers the answer for the user agents
// seen last, in bounded memory, and stands aside when they do not repeat.
// What it gives
// up: the tables are only as fresh as their files; a crawler that adds a
// range is "fake" from there until the file is updated, which is why the
// fake-crawler rule answers with a rate limit, not a block.
package bots

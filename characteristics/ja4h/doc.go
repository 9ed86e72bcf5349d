// Package ja4h parses HTTP/1.x request streams and computes the JA4H
// fingerprint of each request, following shared/fingerprints.md §4.
//
// License: the JA4H method is FoxIO's and is under the FoxIO License 1.1,
// which allows non-commercial use only (see LICENSE in this directory and
// https://github.com/FoxIO-LLC/ja4/blob/main/LICENSE). It lives in its own
// package so that it can be left out or switched off; the rest of guardd
// does not depend on it. JA4H is a FoxIO trademark, used here only to say
// what is computed.
//
// It promises:
//   - Parser follows one client-to-server byte stream of attacker-controlled
//     bytes: requests split anywhere across Feed calls (even one byte or
//     line per call), CRLF and bare LF, obsolete line folding, bodies skipped
//     by Content-Length or chunked coding, pipelining and keep-alive. Each
//     header block is capped at 64 KiB. Bad input stops parsing on the
//     stream; it never panics.
//   - After a CONNECT header block, Feed returns the bytes that follow so the
//     caller can look for TLS in the tunnel.
//   - Parsing reuses the Parser's buffers and does not allocate once they
//     have grown; Fingerprint allocates only the two strings it returns.
//
// It gives up:
//   - HTTP/2 and HTTP/3 (h2c's preface ends parsing, like any bytes that are
//     not an HTTP/1.x request line at a request boundary).
//   - Responses: a Parser reads one direction only. A body whose length it
//     cannot tell (a bad Content-Length) ends parsing.
//
// Not safe for concurrent use: one Parser per stream.
package ja4h

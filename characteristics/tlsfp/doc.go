// Package tlsfp parses TLS ClientHellos and computes their JA3, JA3N and JA4
// fingerprints (with the JA4 raw and original-order variants), following
// shared/fingerprints.md §1–3.
//
// It promises:
//   - ParseClientHello and ParseSSLv2Hello read attacker-controlled bytes with
//     bounds checks (cryptobyte); every nested length must be consistent and a
//     hello is capped at 64 KiB. Bad input returns an error wrapping
//     ErrMalformed, never a panic.
//   - Scanner follows the record layer of one client-to-server stream and
//     emits every ClientHello in it (hellos over several records, several
//     messages per record, the second hello after a HelloRetryRequest),
//     SOCKSPreamble measures a SOCKS4/4a/5 preamble to skip, and FindHello
//     finds a hello behind an unknown preamble such as STARTTLS.
//   - Parsing and scanning reuse the caller's ClientHello and Scanner and do
//     not allocate once their buffers have grown; Compute allocates two
//     strings, whose substrings are the fingerprints it returns, and
//     AppendText writes the same into the caller's buffer.
//
// It gives up:
//   - DTLS (not parsed), and JA3 for SSLv2-compatible hellos (none is defined:
//     the JA3 fields are empty).
//   - TCP reassembly, flows and the order of detection (record at offset 0,
//     SSLv2, CONNECT, SOCKS, fallback scan): the caller (ingest) owns them,
//     using LooksLikeClientHelloRecord, LooksLikeSSLv2Hello, SOCKSPreamble,
//     FindHello and ja4h's CONNECT hand-off.
//
// Credits: JA3 is by Salesforce (BSD-3-Clause); JA4 is by FoxIO
// (BSD-3-Clause). This is an independent implementation of the published
// methods; see the top-level NOTICE.
//
// Not safe for concurrent use: a ClientHello or Scanner belongs to one
// goroutine at a time. Compute and the Looks*/Find* functions are pure.
package tlsfp

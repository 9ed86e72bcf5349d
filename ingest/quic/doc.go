// Package quic opens QUIC client Initial packets (v1, RFC 9000/9001; v2,
// RFC 9369; IETF drafts 23–32) and reassembles the ClientHello from their
// CRYPTO frames, following shared/fingerprints.md §3.2.
//
// It promises:
//   - InitialKeys derives the client Initial keys of a version and DCID.
//   - Flow follows one client UDP flow: coalesced packets, trailing padding,
//     CRYPTO frames shuffled, split across packets and datagrams, duplicated
//     or overlapping (first copy wins), a DCID change after the server's
//     first Initial (keys stay on the original DCID) and the new keys after a
//     Retry. It yields the flow's first ClientHello once, then nothing.
//   - Every length read from a datagram is checked; malformed or foreign
//     packets are skipped, never a panic. A packet that does not open under
//     the client keys is not a client Initial and is ignored silently.
//   - Per flow, work and memory are bounded: 10 opened Initials, 32 tried,
//     64 KiB of CRYPTO data, 256 fragments. Buffers are reused after Reset,
//     and Handle does not allocate on the steady path (deriving keys, once
//     per flow, does).
//
// It gives up:
//   - Time: a flow that makes no progress is dropped by the caller's flow
//     table, which owns timeouts (time is not passed in here).
//   - gQUIC (Q0xx), 0-RTT, Handshake and 1-RTT packets (skipped), and
//     anything sent by the server: a Flow is fed the client's datagrams only.
//   - Parsing the hello: see characteristics/tlsfp.
//
// Not safe for concurrent use: one Flow per flow.
package quic

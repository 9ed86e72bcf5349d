// Package sniff turns captured packets into fingerprint records: one for each
// TLS ClientHello over TCP, each QUIC ClientHello (from Initial packets) and
// each HTTP/1.x request, with the JA3, JA3N, JA4 (and variants) or JA4H of
// characteristics/tlsfp and characteristics/ja4h. Records come out in capture
// order: the order of the packets that completed them.
//
// What it promises:
//   - Content decides, never ports: a stream is TLS when it starts with a
//     ClientHello record or an SSLv2 hello, HTTP when it starts with a request
//     line (after CONNECT, what follows is classified again), SOCKS4/4a/5
//     headers are skipped, and the first 4 KiB are scanned for a hello
//     (STARTTLS). The client is whichever side sends the hello or request.
//   - TCP reassembly of each client's first FlowBytes (64 KiB): out-of-order
//     segments (up to 16 buffered per direction), retransmissions and
//     overlaps (the first copy wins), captures without the SYN, data in the
//     SYN, TSO segments; a SYN on a closed 4-tuple starts a new flow.
//     Checksums are never checked.
//   - Bounded memory: at most MaxFlows flows (the least recently active is
//     evicted), FlowBytes per flow, and IdleTimeout of packet time. A
//     half-open connection costs one small struct and a map entry; buffers
//     exist only while a direction is being read.
//   - Join matches records to log events by client address and port.
//   - ReadFile uses the machine's cores for one file: it reads ahead on one
//     goroutine, computes fingerprints on GOMAXPROCS workers, and calls emit
//     from one goroutine (not the caller's), in capture order. FormatFile
//     also formats on the workers, from fingerprint text it does not
//     allocate, and writes the result in capture order.
//
// What it gives up:
//   - It reads only the start of each connection: hellos after 64 KiB,
//     renegotiation, HTTP/2 and HTTP/3 are not seen.
//   - A missing segment that never arrives stalls its stream: no record, as
//     with tshark.
//   - A Sniffer is single-threaded; run one per capture or fanout member.
//
// JA4H is under the FoxIO License 1.1 (non-commercial use); Config.DisableJA4H
// turns it off.
package sniff

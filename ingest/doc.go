// Package ingest is the folder of guardd's ingesters: its sub-packages turn
// sources of requests into characteristics.Event values.
//
//   - ingest/nginxlog parses nginx access-log lines, in any log_format or as JSON
//     objects, from plain or gzip files.
//   - ingest/capture, ingest/decap, ingest/quic and ingest/sniff take packets
//     from a capture file or a live interface down to TLS, QUIC and HTTP
//     fingerprints.
//
// The replay of access logs through the rules (pipeline/replay) drives the
// pipeline, so it lives beside it, not here.
//
// An ingester fills an Event the caller owns, and the Event's strings alias the
// ingester's buffer until its next call. This package itself holds no code.
package ingest

// Package characteristics defines the Event — one request as seen at the edge —
// and the characteristics rules count and mitigate on: dotted names such as
// ip.src, ip.src.prefix, http.headers["x-api-key"] or tls.ja4.
//
// An Event is filled by an ingester (nginx log lines, sniffed packets, decision
// API requests) and then completed by an Enricher, which applies trusted-proxy
// handling of X-Forwarded-For, normalises IPv4-mapped IPv6 addresses, and adds
// the client prefix, ASN and country.
//
// Ownership: string fields of an Event may alias a buffer owned by its producer
// and are valid only until the producer's next call. Call Clone to keep one.
//
// A Characteristic is a parsed name. Its accessors read the Event directly,
// without allocating, so counting keys and native rule predicates stay on the
// hot path.
package characteristics

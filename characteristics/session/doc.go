// Package session keeps, per client, what its requests so far say of a
// browser's habits: page views, distinct pages viewed without an asset, a Referer or a
// cookie ever sent, HTTP/1.0 beside a later version, POSTs before any GET.
// They are the session.* characteristics (characteristics.Session), weak
// signals for rules with anomaly_score.
//
// A client is an address. The people behind one NAT address share one
// session: what any of them does that a browser does (an asset fetched, a
// cookie returned, a GET before a POST) counts for all, so a NAT only
// looks more like browsers, never less. A session ends after Config.Idle
// without a request.
//
// What it promises: Of works out, in parallel and without allocating, what
// one event says (a Request); Table.Observe adds Requests in the order the
// caller gives (the pipeline's input order, so a replay and the daemon see
// the same sessions) and returns the session as of that request, without
// allocating. Memory is fixed at New: a set-associative table of
// Config.Slots slots of 40 bytes; a new client takes a free or idle slot of
// its set, else the least recently seen one (Evictions counts those). Time
// is always the caller's: the event's. What it gives up: a Table is not
// safe for concurrent use (one goroutine, the pipeline's session stage,
// owns it); an evicted client starts a new session; sessions live on one
// node and do not survive a restart.
package session

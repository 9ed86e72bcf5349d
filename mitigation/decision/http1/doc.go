// Package http1 is a small HTTP/1.1 server for one kind of client: a reverse
// proxy on the same machine asking short, body-less questions over kept-alive
// connections, as nginx's auth_request does of guardd's decision API.
//
// It answers from an epoll event loop on a locked OS thread (Linux only),
// the model nginx itself uses: one thread reads every ready connection,
// parses each request head in place, calls the handler and writes the
// answers back in one write per read. There is no goroutine per connection,
// no per-request allocation and no scheduler hand-off between the request's
// arrival and its answer, so throughput and tail latency stay flat when the
// daemon shares a small machine with nginx. When GOMAXPROCS leaves a P for
// the rest of the program, a loop even waits for events in a raw
// epoll_wait, keeping its P; the scheduler's preemption signal interrupts
// the wait, so garbage collection is not held up. A request's strings alias the
// loop's read buffer: they are valid only until the handler returns.
//
// It gives up what its one client does not need: request bodies are read
// and discarded (Content-Length only; a Transfer-Encoding is answered 501),
// there is no TLS, no HTTP/2, no Expect: 100-continue, no trailers, and a
// handler must not block: it runs on the loop, and a slow handler delays
// every connection of that loop (Config.Loops adds loops). Request heads are
// parsed strictly (RFC 9112): a malformed head is answered 400, an
// oversized one 431, an unknown HTTP version 505, and the connection is
// closed. Idle connections and heads that stall are closed by timeout, and
// past Config.MaxConns new connections are closed at once.
package http1

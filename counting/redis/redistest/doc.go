// Package redistest starts real redis-server and redis-sentinel processes
// on loopback for guardd's integration tests and benchmarks: a standalone
// server, a master with a replica watched by a sentinel, and a
// three-master Cluster made with redis-cli --cluster create. Every process
// is started by the caller, on a free 127.0.0.1 port, with its data in a
// directory the caller owns, and stopped by its PID, never by name.
// Readiness is a condition polled with a deadline (PING answered, the
// cluster state ok), never a guessed sleep.
package redistest

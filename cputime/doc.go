// Package cputime reads the CPU time this process has used (user plus
// system, every thread) for guardd's benchmarks. The machines they run on
// are shared: on a loaded machine wall-clock ns/op measures the queue for a
// core, CPU time per operation measures the work, as long as the benchmark
// is the only busy part of the process. Benchmarks report it beside ns/op,
// as cpu-ns/op or per line, packet or event.
//
// It reads getrusage(2), so it builds on Unix systems only. Only tests and
// benchmarks import it.
package cputime

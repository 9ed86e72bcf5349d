//go:build integration

package redis

import (
	"context"
	"testing"
	"time"

	"github.com/guardd/guardd/counting"
	"github.com/guardd/guardd/counting/redis/redistest"
	"github.com/guardd/guardd/cputime"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// nodeCounter is what BenchmarkNode drives: a Table (fleet mode off) or a
// fleet Counter (on).
type nodeCounter interface {
	Admit(key uint64, n float64, now int64) counting.Result
}

// BenchmarkNode is bench/fleetnode.sh's counting without HTTP: the two
// throttle rules (GCRA 60/min burst 10 on two requests in three, a sliding
// window of 600 per 10 minutes on every request), 100,000 clients seen in
// turn and one request in ten from 100 hot clients, paced at 60,000
// requests/s, against a real redis-server with Fleet.Run flushing. It
// reports the process's CPU per request (cpu-ns/req: user + system,
// including the flush loop and the Redis client) beside the same
// workload on counting.Tables ("off"), so the difference is the node's
// cost of fleet mode. Run with -benchtime 300000x or more (5 s at the
// pace). The flush deadline is 250 ms, so that a busy machine measures
// the two-tier scheme rather than the breaker.
func BenchmarkNode(b *testing.B) {
	const rate = 60_000 // requests per second
	const clients = 100_000
	lim := []counting.Limit{
		{Algorithm: counting.GCRA, Period: time.Minute, Requests: 60, Burst: 10},
		{Algorithm: counting.SlidingWindow, Period: 10 * time.Minute, Requests: 600},
	}
	// scripts, when not nil, returns the ops sent to Redis so far.
	run := func(b *testing.B, cs []nodeCounter, scripts func() float64) {
		key := func(n int) uint64 {
			if n%10 == 0 {
				return counting.HashString("hot") + uint64(n/10%100)
			}
			return mix(uint64(n%clients) + 1)
		}
		one := func(n int, now int64) {
			k := key(n)
			if n%3 != 0 {
				cs[0].Admit(k, 1, now)
			}
			cs[1].Admit(k, 1, now)
		}
		// Warm-up: every client known, and the flush loop done with their
		// first scripts (keys stop being flushed for a few intervals).
		if b.N < 1000 {
			return // the framework's first call: measure nothing
		}
		const warm = clients * 3 // each client seen on both rules
		for n := range warm {
			one(n, time.Now().UnixNano())
		}
		if scripts != nil {
			last, still := scripts(), 0
			for deadline := time.Now().Add(time.Minute); still < 4; {
				if time.Now().After(deadline) {
					b.Fatal("the flush loop did not catch up with the warm-up in a minute")
				}
				time.Sleep(50 * time.Millisecond) // caught up = no script run for 4 polls 50 ms apart: the pause defines quiet
				if s := scripts(); s == last {
					still++
				} else {
					last, still = s, 0
				}
			}
		}
		cpu := cputime.Process()
		var s0 float64
		if scripts != nil {
			s0 = scripts()
		}
		b.ResetTimer()
		start := time.Now()
		for i := range b.N {
			if i%64 == 0 {
				if d := time.Until(start.Add(time.Duration(i) * time.Second / rate)); d > 0 {
					time.Sleep(d) // pacing, not synchronisation
				}
			}
			one(warm+i, time.Now().UnixNano())
		}
		b.StopTimer()
		cputime.Report(b, cpu, int64(b.N), "cpu-ns/req")
		if scripts != nil {
			b.ReportMetric((scripts()-s0)/float64(b.N), "scripts/req")
		}
	}
	b.Run("off", func(b *testing.B) {
		var cs []nodeCounter
		for _, l := range lim {
			t, err := counting.NewTable(counting.Config{Limit: l, MaxKeys: 300_000})
			if err != nil {
				b.Fatal(err)
			}
			cs = append(cs, t)
		}
		run(b, cs, nil)
	})
	b.Run("on", func(b *testing.B) {
		srv := redistest.Start(b, 0)
		conn, err := NewConn(Options{Addresses: []string{srv.Addr}})
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		// A deadline this busy machine meets: the scheme's cost, not the
		// breaker's (bench/fleet.md's second pass does the same).
		f, err := New(Config{Node: "bench", MaxKeys: 300_000, Deadline: 250 * time.Millisecond}, conn, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- f.Run(ctx) }()
		defer func() { cancel(); <-done }()
		var cs []nodeCounter
		for i, l := range lim {
			c, err := f.Counter(Rule{Name: []string{"api", "site"}[i], Limit: l})
			if err != nil {
				b.Fatal(err)
			}
			cs = append(cs, c)
		}
		run(b, cs, func() float64 { return testutil.ToFloat64(f.met.keys) })
		// Missed deadlines open the breaker, and recovery re-sends: a
		// busy machine's figures, not the scheme's.
		b.ReportMetric(testutil.ToFloat64(f.met.flushes.WithLabelValues("timeout")), "timeouts")
		b.ReportMetric(testutil.ToFloat64(f.met.flushes.WithLabelValues("ok")), "flushes")
	})
}

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/guardd/guardd/counting"
	"github.com/guardd/guardd/counting/redis"
	"github.com/guardd/guardd/counting/redis/redistest"
)

// distinctThroughput: three nodes as in throughput (10,000 client keys,
// one sliding-window rule), plus two distinct rules per event:
//
//	ua     distinct values per client (its user agents): each client has
//	       two, limit 5 in 10 minutes: never over
//	probe  distinct clients per site (probe_campaign, form_campaign): 16
//	       sites, limit 1,000 in an hour; each site sees about 625
//	       clients, near its limit and never over
//
// Passes alternate, in one run against one Redis: the distinct rules
// counted on each node alone (counting.Distinct.Add, as before fleet-wide
// distinct counts), then fleet-wide (redis.DistinctCounter.AddDistinct),
// twice each, after a warm-up of each.
func distinctThroughput(t *tb) {
	srv := redistest.Start(t, 0)
	const keys, sites = 10_000, 16
	rule := redis.Rule{Name: "tput", Limit: counting.Limit{Period: time.Minute, Requests: 1000}}
	type node struct {
		c      *redis.Counter
		ua, pr *redis.DistinctCounter
		reg    *prometheus.Registry
		cancel context.CancelFunc
		done   chan struct{}
	}
	var nodes []*node
	for i := range 3 {
		reg := prometheus.NewRegistry()
		f, err := redis.New(redis.Config{Node: "bench-" + strconv.Itoa(i), Deadline: *deadline}, conn(srv.Addr), reg, nil)
		if err != nil {
			fatalf("%v", err)
		}
		n := &node{reg: reg, done: make(chan struct{})}
		if n.c, err = f.Counter(rule); err != nil {
			fatalf("%v", err)
		}
		mk := func(name string, period time.Duration, limit float64) *redis.DistinctCounter {
			local, err := counting.NewDistinct(counting.DistinctConfig{Period: period, Limit: limit})
			if err != nil {
				fatalf("%v", err)
			}
			d, err := f.Distinct(redis.DistinctRule{Name: name}, local, redis.DistinctConfig{})
			if err != nil {
				fatalf("%v", err)
			}
			return d
		}
		n.ua, n.pr = mk("ua", 10*time.Minute, 5), mk("probe", time.Hour, 1000)
		ctx, cancel := context.WithCancel(context.Background())
		n.cancel = cancel
		go func() { f.Run(ctx); close(n.done) }()
		nodes = append(nodes, n)
	}
	workers := max(runtime.GOMAXPROCS(0)/3, 1)
	sum := func(family, label, value string) float64 {
		var s float64
		for _, n := range nodes {
			mfs, _ := n.reg.Gather()
			for _, mf := range mfs {
				if mf.GetName() != family {
					continue
				}
				for _, m := range mf.GetMetric() {
					ok := label == ""
					for _, l := range m.GetLabel() {
						ok = ok || l.GetName() == label && l.GetValue() == value
					}
					if ok {
						s += m.GetCounter().GetValue()
					}
				}
			}
		}
		return s
	}
	pass := func(name string, fleet bool, seed uint64, measure bool) {
		var events atomic.Int64
		var wg sync.WaitGroup
		before := stats(srv)
		w0, r0 := sum("guardd_counting_redis_distinct_keys_flushed_total", "op", "write"), sum("guardd_counting_redis_distinct_keys_flushed_total", "op", "read")
		b0, d0 := sum("guardd_counting_redis_distinct_sent_bytes_total", "", ""), sum("guardd_counting_redis_distinct_deferred_keys_total", "", "")
		cpu0 := selfCPU()
		start := time.Now()
		for ni, n := range nodes {
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(ni)+seed, uint64(w)))
					var cnt int64
					for time.Since(start) < *dur {
						now := time.Now().UnixNano()
						for range 256 {
							k := r.Uint64N(keys)
							n.c.Add(k, 1, now)
							ua := k<<1 | r.Uint64N(2) // each client's two user agents
							if fleet {
								n.ua.AddDistinct(k, ua, now)
								n.pr.AddDistinct(k%sites, k, now)
							} else {
								n.ua.Local().Add(k, ua, now)
								n.pr.Local().Add(k%sites, k, now)
							}
						}
						cnt += 256
					}
					events.Add(cnt)
				}()
			}
		}
		wg.Wait()
		elapsed := time.Since(start)
		if !measure {
			return
		}
		after := stats(srv)
		sec := elapsed.Seconds()
		ev := float64(events.Load())
		fmt.Printf("distinct %-6s 3 nodes x %d workers: %.0f events/s (each: 1 counter Add, 2 distinct adds), %.0f ns nodes' CPU (user+sys) per event; Redis CPU %.1f%% of a core; %.0f scripts/s; distinct scripts/s write %.0f read %.0f, %.0f bytes/s sent, %.0f keys deferred\n",
			name, workers, ev/sec, (selfCPU()-cpu0).Seconds()*1e9/ev, 100*(after.cpu-before.cpu)/sec, (after.scripts-before.scripts)/sec,
			(sum("guardd_counting_redis_distinct_keys_flushed_total", "op", "write")-w0)/sec,
			(sum("guardd_counting_redis_distinct_keys_flushed_total", "op", "read")-r0)/sec,
			(sum("guardd_counting_redis_distinct_sent_bytes_total", "", "")-b0)/sec,
			sum("guardd_counting_redis_distinct_deferred_keys_total", "", "")-d0)
	}
	pass("local", false, 100, false) // warm-up: every key's first lease
	pass("fleet", true, 200, false)  // warm-up: every key's first sketch
	// The first sketches of 10,000 keys take a few flushes at 1,024 keys
	// per flush: wait until no key is left waiting, so that the passes
	// measure the steady state.
	last, since := -1.0, time.Now()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		d := sum("guardd_counting_redis_distinct_deferred_keys_total", "", "")
		if d != last {
			last, since = d, time.Now()
		} else if time.Since(since) > 300*time.Millisecond {
			break
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
	for i := range 2 {
		pass("local", false, uint64(300+i), true)
		pass("fleet", true, uint64(400+i), true)
	}
	for _, n := range nodes {
		n.cancel()
		<-n.done
	}
	srv.Kill()
}

// selfCPU is this process's user+sys CPU time: the three nodes', their
// flush loops and Redis clients included.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

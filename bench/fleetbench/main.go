// Command fleetbench measures fleet mode (counting/redis, mitigation/fleet)
// against real redis-server processes it starts on loopback, for
// bench/fleet.sh and BENCHMARKS.md. Every figure of one run comes from the
// same machine state, peers included:
//
//	throughput   three fleet nodes against one Redis: aggregate events/s,
//	             Redis CPU, events per Redis command; beside one EVALSHA per
//	             event (the Envoy ratelimit design) on the same Redis
//	accuracy     over-admission against an exact count, even and 90/5/5
//	             traffic across the nodes
//	latency      Counter.Add p99 with Redis healthy, 50 ms slower (a delaying
//	             proxy), blackholed (SIGSTOP) and killed
//	propagation  mitigation made on one node until enforced on another, p99
//	single       one node: Counter.Add (fleet on) against counting.Table.Add
//	distinct     throughput with two distinct rules, counted per node and
//	             fleet-wide in alternate passes (not run by default)
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/guardd/guardd/counting"
	"github.com/guardd/guardd/counting/redis"
	"github.com/guardd/guardd/counting/redis/redistest"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/fleet"
)

// tb lets redistest run outside a test.
type tb struct{ cleanups []func() }

func (*tb) Helper()                   {}
func (*tb) Fatalf(f string, a ...any) { fatalf(f, a...) }
func (*tb) Skipf(f string, a ...any)  { fatalf("cannot run: "+f, a...) }
func (*tb) Logf(f string, a ...any)   { log.Printf(f, a...) }
func (t *tb) Cleanup(f func())        { t.cleanups = append(t.cleanups, f) }
func (*tb) TempDir() string           { d, _ := os.MkdirTemp("", "fleetbench"); return d }
func (t *tb) done() {
	slices.Reverse(t.cleanups)
	for _, f := range t.cleanups {
		f()
	}
}

// current holds the servers to stop before exiting on an error.
var current *tb

// fatalf stops every server started so far, then exits.
func fatalf(format string, args ...any) {
	if current != nil {
		current.done()
	}
	log.Fatalf(format, args...)
}

var (
	dur      = flag.Duration("d", 5*time.Second, "duration of each throughput and latency run")
	deadline = flag.Duration("deadline", redis.DefaultDeadline, "the fleet's Redis deadline in the throughput and accuracy runs")
)

func main() {
	flag.Parse()
	what := flag.Args()
	if len(what) == 0 {
		what = []string{"throughput", "accuracy", "latency", "propagation", "single"}
	}
	t := &tb{}
	current = t
	defer t.done()
	log.SetFlags(0)
	for _, w := range what {
		switch w {
		case "throughput":
			throughput(t)
		case "accuracy":
			accuracy(t)
		case "latency":
			latency(t)
		case "propagation":
			propagation(t)
		case "single":
			single()
		case "distinct":
			distinctThroughput(t)
		default:
			fatalf("unknown measurement %q", w)
		}
	}
}

func conn(addr string) *redis.Conn {
	c, err := redis.NewConn(redis.Options{Addresses: []string{addr}})
	if err != nil {
		fatalf("%v", err)
	}
	return c
}

// redisStats: Redis CPU seconds, commands processed (the calls scripts
// make included) and scripts run (EVALSHA and EVAL: the commands clients
// send).
type redisStats struct{ cpu, cmds, scripts float64 }

func stats(s *redistest.Server) redisStats {
	f := func(sec, k string) float64 {
		v, err := s.Info(sec, k)
		if err != nil {
			fatalf("%v", err)
		}
		x, _ := strconv.ParseFloat(v, 64)
		return x
	}
	calls := func(k string) float64 {
		v, err := s.Info("commandstats", k)
		if err != nil {
			return 0
		}
		c, _, _ := strings.Cut(strings.TrimPrefix(v, "calls="), ",")
		x, _ := strconv.ParseFloat(c, 64)
		return x
	}
	return redisStats{cpu: f("cpu", "used_cpu_user") + f("cpu", "used_cpu_sys"), cmds: f("stats", "total_commands_processed"),
		scripts: calls("cmdstat_evalsha") + calls("cmdstat_eval")}
}

type fleetNode struct {
	reg    *prometheus.Registry
	f      *redis.Fleet
	c      *redis.Counter
	cancel context.CancelFunc
	done   chan struct{}
}

func startFleet(addr string, n int, rule redis.Rule, cfg redis.Config) []*fleetNode {
	var out []*fleetNode
	for i := range n {
		cfg := cfg
		cfg.Node = "bench-" + strconv.Itoa(i)
		reg := prometheus.NewRegistry()
		f, err := redis.New(cfg, conn(addr), reg, nil)
		if err != nil {
			fatalf("%v", err)
		}
		c, err := f.Counter(rule)
		if err != nil {
			fatalf("%v", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		nd := &fleetNode{reg: reg, f: f, c: c, cancel: cancel, done: make(chan struct{})}
		go func() { f.Run(ctx); close(nd.done) }()
		out = append(out, nd)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, nd := range out {
		for nd.f.Status().LiveNodes < n {
			if time.Now().After(deadline) {
				fatalf("nodes do not see each other: %+v", nd.f.Status())
			}
			time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
		}
	}
	return out
}

// metric sums a counter over the nodes, for label name=value ("" for all).
func metric(nodes []*fleetNode, family, name, value string) float64 {
	var sum float64
	for _, nd := range nodes {
		mfs, _ := nd.reg.Gather()
		for _, mf := range mfs {
			if mf.GetName() != family {
				continue
			}
			for _, m := range mf.GetMetric() {
				ok := name == ""
				for _, l := range m.GetLabel() {
					if l.GetName() == name && l.GetValue() == value {
						ok = true
					}
				}
				if ok {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// health says how often the nodes missed Redis during a run: on a busy
// machine a missed deadline opens the breaker and rules fall back to their
// on_store_error, which is not the two-tier scheme any more.
func health(nodes []*fleetNode) string { return healthSince(nodes, [6]float64{}) }

func healthCounts(nodes []*fleetNode) [6]float64 {
	return [6]float64{
		metric(nodes, "guardd_counting_redis_flushes_total", "outcome", "ok"),
		metric(nodes, "guardd_counting_redis_flushes_total", "outcome", "timeout"),
		metric(nodes, "guardd_counting_redis_flushes_total", "outcome", "error"),
		metric(nodes, "guardd_counting_redis_decisions_total", "mode", "fleet"),
		metric(nodes, "guardd_counting_redis_decisions_total", "mode", "lease_wait"),
		metric(nodes, "guardd_counting_redis_decisions_total", "mode", "local"),
	}
}

func healthSince(nodes []*fleetNode, from [6]float64) string {
	c := healthCounts(nodes)
	for i := range c {
		c[i] -= from[i]
	}
	return fmt.Sprintf("flushes ok %.0f, timed out %.0f, failed %.0f; decisions fleet %.0f, lease_wait %.0f, local (breaker open) %.0f",
		c[0], c[1], c[2], c[3], c[4], c[5])
}

func stopFleet(nodes []*fleetNode) {
	for _, nd := range nodes {
		nd.cancel()
		<-nd.done
	}
}

// throughput: three nodes, 10,000 client keys, sliding window 1,000/min
// per key (traffic stays under it, as most traffic does), as fast as the
// CPU allows; then one EVALSHA per event on the same Redis.
func throughput(t *tb) {
	srv := redistest.Start(t, 0)
	const keys = 10_000
	rule := redis.Rule{Name: "tput", Limit: counting.Limit{Period: time.Minute, Requests: 1000}}
	nodes := startFleet(srv.Addr, 3, rule, redis.Config{Deadline: *deadline})
	workers := max(runtime.GOMAXPROCS(0)/3, 1)
	var events atomic.Int64
	var wg sync.WaitGroup
	var before redisStats
	var start time.Time
	var h0 [6]float64
	// A warm-up of the same length first: every key gets its first lease
	// (one script per key per node), then the steady state is measured.
	for phase := range 2 {
		events.Store(0)
		before = stats(srv)
		h0 = healthCounts(nodes)
		start = time.Now()
		for ni, nd := range nodes {
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(ni+10*phase), uint64(w)))
					n := int64(0)
					for time.Since(start) < *dur {
						for range 256 {
							nd.c.Add(r.Uint64N(keys), 1, time.Now().UnixNano())
						}
						n += 256
					}
					events.Add(n)
				}()
			}
		}
		wg.Wait()
	}
	elapsed := time.Since(start)
	h := healthSince(nodes, h0)
	stopFleet(nodes)
	after := stats(srv)
	ev := float64(events.Load())
	report("fleet: 3 nodes x "+strconv.Itoa(workers)+" workers", ev, elapsed, before, after)
	fmt.Printf("  (%s)\n", h)

	// Envoy-style: every event is one EVALSHA (fixed window INCRBY+EXPIRE
	// in one script), waited for. 64 callers per node, auto-pipelined by
	// rueidis: a generous peer.
	c := conn(srv.Addr)
	if _, err := c.Heartbeat(context.Background(), "envoy", time.Second); err != nil { // connect before the callers start
		fatalf("%v", err)
	}
	events.Store(0)
	before = stats(srv)
	start = time.Now()
	for ni := range 3 {
		for w := range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(ni), uint64(w)))
				st, errs := make([]redis.State, 1), make([]error, 1)
				n := int64(0)
				for time.Since(start) < *dur {
					k := "guardd:{envoy:" + strconv.FormatUint(r.Uint64N(keys), 16) + "}"
					op := redis.Op{Alg: counting.FixedWindow, Key: k, Delta: 1, Nodes: 1, Period: 60_000_000, Limit: 1000, Burst: 1000}
					if err := c.Apply(context.Background(), []redis.Op{op}, st, errs); err != nil {
						fatalf("%v", err)
					}
					n++
				}
				events.Add(n)
			}()
		}
	}
	wg.Wait()
	elapsed = time.Since(start)
	after = stats(srv)
	ev = float64(events.Load())
	report("per-event EVALSHA: 3 x 64 callers", ev, elapsed, before, after)
	c.Close()
	srv.Kill()
}

func report(name string, ev float64, elapsed time.Duration, before, after redisStats) {
	sec := elapsed.Seconds()
	fmt.Printf("throughput %s: %.0f events/s; Redis CPU %.1f%% of a core; %.0f scripts/s (%.0f commands/s counting those inside scripts); %.1f events per script\n",
		name, ev/sec, 100*(after.cpu-before.cpu)/sec, (after.scripts-before.scripts)/sec, (after.cmds-before.cmds)/sec, ev/max(after.scripts-before.scripts, 1))
}

// accuracy: 3 nodes, 200 keys each limited to 1,000 per hour, 3,000 events
// per key, paced over about two seconds; an exact count admits 1,000 per
// key. share gives each node's part of a key's traffic.
func accuracy(t *tb) {
	srv := redistest.Start(t, 0)
	for _, tc := range []struct {
		name  string
		share [3]float64
	}{{"even", [3]float64{1. / 3, 1. / 3, 1. / 3}}, {"90/5/5", [3]float64{.9, .05, .05}}} {
		for _, alg := range []counting.Algorithm{counting.SlidingWindow, counting.GCRA} {
			const keys, limit, per = 200, 1000, 3000
			rule := redis.Rule{Name: "acc" + strings.ReplaceAll(tc.name, "/", "") + alg.String(), Limit: counting.Limit{Algorithm: alg, Period: time.Hour, Requests: limit}}
			nodes := startFleet(srv.Addr, 3, rule, redis.Config{Deadline: *deadline})
			admitted := make([][3]int64, keys)
			var mu sync.Mutex
			var wg sync.WaitGroup
			total := keys * per
			for ni, nd := range nodes {
				wg.Add(1)
				go func() {
					defer wg.Done()
					n := int(float64(total) * tc.share[ni])
					got := make([]int64, keys)
					start := time.Now()
					gap := 2 * time.Second / time.Duration(n)
					for i := range n {
						k := i % keys
						if !nd.c.Add(uint64(k), 1, time.Now().UnixNano()).Exceeded {
							got[k]++
						}
						if i%64 == 63 {
							if d := time.Duration(i+1)*gap - time.Since(start); d > 0 {
								time.Sleep(d) // pacing
							}
						}
					}
					mu.Lock()
					for k := range got {
						admitted[k][ni] = got[k]
					}
					mu.Unlock()
				}()
			}
			wg.Wait()
			h := health(nodes)
			stopFleet(nodes)
			var over, under, sum float64
			for k := range admitted {
				a := float64(admitted[k][0] + admitted[k][1] + admitted[k][2])
				sum += a
				over += max(0, a-limit)
				under += max(0, limit-a)
			}
			exact := float64(keys * limit)
			fmt.Printf("accuracy (deadline %v) %s %s: admitted %.0f, exact %.0f: over-admission %.3f%%, under-admission %.3f%% (%s)\n",
				*deadline, tc.name, alg, sum, exact, 100*over/exact, 100*under/exact, h)
		}
	}
	srv.Kill()
}

// delayProxy forwards TCP to target, delaying every chunk by d in each
// direction (ordering kept): Redis made 2d slower per round trip... we use
// d/2 each way so a round trip gains d.
func delayProxy(target string, d time.Duration) (string, func()) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fatalf("%v", err)
	}
	var conns sync.WaitGroup
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			pipe := func(dst, src net.Conn) {
				type chunk struct {
					at time.Time
					b  []byte
				}
				ch := make(chan chunk, 1024)
				go func() {
					for k := range ch {
						time.Sleep(time.Until(k.at))
						if _, err := dst.Write(k.b); err != nil {
							break
						}
					}
					dst.Close()
				}()
				buf := make([]byte, 64<<10)
				for {
					n, err := src.Read(buf)
					if n > 0 {
						ch <- chunk{time.Now().Add(d / 2), append([]byte(nil), buf[:n]...)}
					}
					if err != nil {
						close(ch)
						return
					}
				}
			}
			conns.Add(2)
			go func() { defer conns.Done(); pipe(u, c) }()
			go func() { defer conns.Done(); pipe(c, u) }()
		}
	}()
	return l.Addr().String(), func() { l.Close() }
}

// latency: one node, a steady stream over 10,000 keys; Counter.Add timed
// for each event.
func latency(t *tb) {
	srv := redistest.Start(t, 0)
	proxy, stopProxy := delayProxy(srv.Addr, 50*time.Millisecond)
	defer stopProxy()
	run := func(name, addr string, before, after func()) {
		rule := redis.Rule{Name: "lat" + name, Limit: counting.Limit{Period: time.Minute, Requests: 100}}
		nodes := startFleet(addr, 1, rule, redis.Config{Cooldown: 500 * time.Millisecond})
		if before != nil {
			before()
		}
		var lat []time.Duration
		r := rand.New(rand.NewPCG(1, 2))
		start := time.Now()
		for i := 0; time.Since(start) < *dur; i++ {
			k := r.Uint64N(10_000)
			t0 := time.Now()
			nodes[0].c.Add(k, 1, t0.UnixNano())
			lat = append(lat, time.Since(t0))
			if i%100 == 99 {
				time.Sleep(time.Millisecond) // pacing: about 100,000 events/s
			}
		}
		h := health(nodes)
		if after != nil {
			after()
		}
		stopFleet(nodes)
		slices.Sort(lat)
		q := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
		fmt.Printf("latency %-10s Counter.Add p50 %v p99 %v p99.9 %v max %v (%d events; %s)\n", name, q(.5), q(.99), q(.999), lat[len(lat)-1], len(lat), h)
	}
	run("healthy", srv.Addr, nil, nil)
	run("slow+50ms", proxy, nil, nil)
	run("blackholed", srv.Addr, srv.Stop, srv.Cont)
	run("killed", srv.Addr, srv.Kill, nil)
}

// propagation: two nodes' mitigation stores synced through Redis; a
// mitigation added on a, timed until b's Lookup finds it.
func propagation(t *tb) {
	srv := redistest.Start(t, 0)
	var stores []*mitigation.Store
	var syncs []*fleet.Sync
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, n := range []string{"a", "b"} {
		st, err := mitigation.New(mitigation.Config{}, nil, nil)
		if err != nil {
			fatalf("%v", err)
		}
		s, err := fleet.New(fleet.Config{Node: n}, st, conn(srv.Addr), nil, nil)
		if err != nil {
			fatalf("%v", err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); s.Run(ctx) }()
		stores, syncs = append(stores, st), append(syncs, s)
	}
	for !syncs[0].Status().Loaded || !syncs[1].Status().Loaded {
		time.Sleep(5 * time.Millisecond) // polling a condition
	}
	var lat []time.Duration
	for i := range 500 {
		sc := mitigation.Scope{{Name: "ip.src", Value: fmt.Sprintf("198.18.%d.%d", i/250, i%250+1)}}
		key := sc.Key()
		now := time.Now()
		stores[0].Add(mitigation.Mitigation{Rule: "prop", Action: mitigation.ActionBlock, Scope: sc, Expires: now.Add(time.Hour)}, now)
		for {
			if _, ok := stores[1].Lookup(key, time.Now()); ok {
				break
			}
			runtime.Gosched()
		}
		lat = append(lat, time.Since(now))
		time.Sleep(2 * time.Millisecond) // pacing between samples
	}
	cancel()
	wg.Wait()
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	fmt.Printf("propagation a -> b: p50 %v p99 %v max %v (%d mitigations)\n", q(.5), q(.99), lat[len(lat)-1], len(lat))
	srv.Kill()
}

// single: one goroutine, 100,000 keys, sliding window; Counter.Add with a
// healthy fleet (its flush loop running against a store that answers at
// once) against counting.Table.Add.
func single() {
	const keys = 100_000
	lim := counting.Limit{Period: time.Minute, Requests: 1e9}
	tbl, err := counting.NewTable(counting.Config{Limit: lim})
	if err != nil {
		fatalf("%v", err)
	}
	measure := func(add func(k uint64, now int64)) float64 {
		r := rand.New(rand.NewPCG(3, 4))
		ks := make([]uint64, 1<<16)
		for i := range ks {
			ks[i] = r.Uint64N(keys)
		}
		start := time.Now()
		n := 0
		for time.Since(start) < *dur {
			now := time.Now().UnixNano()
			for i := range 4096 {
				add(ks[(n+i)&(len(ks)-1)], now)
			}
			n += 4096
		}
		return float64(n) / time.Since(start).Seconds()
	}
	off := measure(func(k uint64, now int64) { tbl.Add(k, 1, now) })
	srv := &tb{}
	defer srv.done()
	s := redistest.Start(srv, 0)
	nodes := startFleet(s.Addr, 1, redis.Rule{Name: "single", Limit: lim}, redis.Config{})
	on := measure(func(k uint64, now int64) { nodes[0].c.Add(k, 1, now) })
	stopFleet(nodes)
	fmt.Printf("single node: counting.Table.Add %.0f/s (%.0f ns), fleet Counter.Add %.0f/s (%.0f ns): %.0f%%\n", off, 1e9/off, on, 1e9/on, 100*on/off)
	_ = io.EOF
}

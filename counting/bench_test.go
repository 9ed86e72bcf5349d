package counting

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// Benchmarks over a million random pre-hashed keys, the working set of a
// busy edge under a distinct-address flood. Every Add touches a random key,
// so they measure cache misses more than arithmetic.

const benchKeys = 1 << 20

var benchKeySet = sync.OnceValue(func() []uint64 {
	rng := rand.New(rand.NewPCG(5, 6))
	keys := make([]uint64, benchKeys)
	for i := range keys {
		keys[i] = rng.Uint64()
	}
	return keys
})

// cpuTime is the CPU time used by the process so far. The benchmarks report
// it per operation (cpu-ns/op) beside the wall-clock ns/op, because the
// machines they run on are shared: on a loaded machine ns/op measures the
// queue for a core, cpu-ns/op the work.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// adder is what the benchmarks drive: a Table, or one of the peers.
type adder interface {
	add(key uint64, now int64) bool
}

type tableAdder struct{ *Table }

func (a tableAdder) add(key uint64, now int64) bool { return a.Add(key, 1, now).Exceeded }

// mapCounter is the plain peer: sharded map[uint64]uint64 counts, no
// window, no cap.
type mapCounter struct {
	shards [64]struct {
		sync.Mutex
		m map[uint64]uint64
		_ [40]byte
	}
}

func newMapCounter() *mapCounter {
	c := &mapCounter{}
	for i := range c.shards {
		c.shards[i].m = map[uint64]uint64{}
	}
	return c
}

func (c *mapCounter) add(key uint64, _ int64) bool {
	s := &c.shards[key>>58]
	s.Lock()
	s.m[key]++
	n := s.m[key]
	s.Unlock()
	return n > 100
}

// mapTable is the design not taken: the same sliding window arithmetic
// with the state in sharded map[uint64]slot instead of open addressing.
type mapTable struct {
	t      *Table // for its arithmetic only
	shards [64]struct {
		sync.Mutex
		m map[uint64]slot
		_ [40]byte
	}
}

func newMapTable() *mapTable {
	t, err := NewTable(Config{Limit: Limit{Period: time.Minute, Requests: 100}})
	if err != nil {
		panic(err)
	}
	c := &mapTable{t: t}
	for i := range c.shards {
		c.shards[i].m = map[uint64]slot{}
	}
	return c
}

func (c *mapTable) add(key uint64, now int64) bool {
	s := &c.shards[key>>58]
	s.Lock()
	sl, ok := s.m[key]
	if !ok {
		sl.t = c.t.windowStart(now)
	}
	r := c.t.slidingAdd(&c.t.shards[0], &sl, 1, now)
	s.m[key] = sl
	s.Unlock()
	return r.Exceeded
}

// limiterMap is the x/time/rate peer: one *rate.Limiter per key in sharded
// maps.
type limiterMap struct {
	shards [64]struct {
		sync.Mutex
		m map[uint64]*rate.Limiter
		_ [40]byte
	}
}

func newLimiterMap() *limiterMap {
	c := &limiterMap{}
	for i := range c.shards {
		c.shards[i].m = map[uint64]*rate.Limiter{}
	}
	return c
}

func (c *limiterMap) add(key uint64, now int64) bool {
	s := &c.shards[key>>58]
	s.Lock()
	l := s.m[key]
	if l == nil {
		l = rate.NewLimiter(rate.Every(time.Minute/100), 100)
		s.m[key] = l
	}
	ok := l.AllowN(time.Unix(0, now), 1)
	s.Unlock()
	return !ok
}

func benchPeers() []struct {
	name string
	make func() adder
} {
	tab := func(alg Algorithm, requests float64) func() adder {
		return func() adder {
			t, err := NewTable(Config{Limit: Limit{Algorithm: alg, Period: time.Minute, Requests: requests}, MaxKeys: 2 * benchKeys})
			if err != nil {
				panic(err)
			}
			return tableAdder{t}
		}
	}
	return []struct {
		name string
		make func() adder
	}{
		{"sliding_window", tab(SlidingWindow, 100)},
		{"fixed_window", tab(FixedWindow, 100)},
		{"token_bucket", tab(TokenBucket, 100)},
		{"gcra", tab(GCRA, 100)},
		// A log keeps ceil(Requests)+1 times per key: measured at a small
		// limit, its intended use.
		{"sliding_log_10", tab(SlidingLog, 10)},
		{"peer=map_uint64", func() adder { return newMapCounter() }},
		{"alt=map_slot_sliding_window", func() adder { return newMapTable() }},
		{"peer=x_time_rate", func() adder { return newLimiterMap() }},
	}
}

// BenchmarkAdd: one goroutine, every key already present (the steady state).
func BenchmarkAdd(b *testing.B) {
	keys := benchKeySet()
	for _, p := range benchPeers() {
		b.Run(p.name, func(b *testing.B) {
			a := p.make()
			now := t0
			for _, k := range keys {
				a.add(k, now)
			}
			i := 0
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			for b.Loop() {
				now += 1000
				a.add(keys[i&(benchKeys-1)], now)
				i += 7919 // a prime stride: random order, every key visited
			}
			reportCPU(b, cpu)
		})
	}
}

// BenchmarkAddParallel is BenchmarkAdd from GOMAXPROCS goroutines.
func BenchmarkAddParallel(b *testing.B) {
	keys := benchKeySet()
	for _, p := range benchPeers() {
		b.Run(p.name, func(b *testing.B) {
			a := p.make()
			for _, k := range keys {
				a.add(k, t0)
			}
			var seed atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				i := int(seed.Add(1)) * 104729
				now := t0
				for pb.Next() {
					now += 1000
					a.add(keys[i&(benchKeys-1)], now)
					i += 7919
				}
			})
			reportCPU(b, cpu)
		})
	}
}

// BenchmarkBytesPerKey inserts a million keys and reports the heap they hold
// per key (bytes/key). Its ns/op is the cost of inserting new keys, growth
// included.
func BenchmarkBytesPerKey(b *testing.B) {
	keys := benchKeySet()[:1_000_000]
	for _, p := range benchPeers() {
		b.Run(p.name, func(b *testing.B) {
			var perKey float64
			b.ReportAllocs()
			for b.Loop() {
				before := heapAlloc()
				a := p.make()
				for _, k := range keys {
					a.add(k, t0)
				}
				after := heapAlloc()
				runtime.KeepAlive(a)
				perKey = float64(after-before) / float64(len(keys))
			}
			b.ReportMetric(perKey, "bytes/key")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(keys)), "ns/insert")
		})
	}
}

// BenchmarkFlood adds a new random key on every operation to a table full at
// its 100,000-key cap: the cost of a distinct-address flood, where every
// Add evicts.
func BenchmarkFlood(b *testing.B) {
	for _, alg := range []Algorithm{SlidingWindow, GCRA} {
		b.Run(alg.String(), func(b *testing.B) {
			tab, err := NewTable(Config{Limit: Limit{Algorithm: alg, Period: time.Minute, Requests: 100}, MaxKeys: 100_000})
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(7, 8))
			now := t0
			for range 200_000 {
				tab.Add(rng.Uint64(), 1, now)
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			for b.Loop() {
				now += 1000
				tab.Add(rng.Uint64(), 1, now)
			}
			reportCPU(b, cpu)
		})
	}
}

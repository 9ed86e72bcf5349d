package counting

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/guardd/guardd/cputime"
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

func reportCPU(b *testing.B, start time.Duration) {
	cputime.Report(b, start, int64(b.N), "cpu-ns/op")
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
	r := c.t.slidingAdd(&c.t.keys.shards[0], &sl, 1, now)
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
			cpu := cputime.Process()
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
			cpu := cputime.Process()
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
			cpu := cputime.Process()
			for b.Loop() {
				now += 1000
				tab.Add(rng.Uint64(), 1, now)
			}
			reportCPU(b, cpu)
		})
	}
}

// BenchmarkDistinct adds values to a Distinct table: "keys" cycles over
// 100,000 keys (as many clients, each sending a few distinct values and
// repeats, the table larger than the caches), "flood" adds a new key with
// a new value on every operation to a table full at its cap (every Add
// evicts), and "dense" keeps adding new values to 1,000 keys past the
// exact range, where every raised register re-estimates.
func BenchmarkDistinct(b *testing.B) {
	for _, bc := range []struct {
		name    string
		keys    int
		maxKeys int
		values  uint64 // distinct values per key
	}{
		{"keys", 100_000, 0, 8},
		{"flood", 0, 800_000, 0},
		{"dense", 1000, 0, 1 << 20},
	} {
		b.Run(bc.name, func(b *testing.B) {
			d, err := NewDistinct(DistinctConfig{Period: time.Hour, Limit: 100, MaxKeys: bc.maxKeys})
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(9, 10))
			keys := benchKeySet()
			now := t0
			next := func(i int) (uint64, uint64) {
				if bc.keys == 0 {
					return rng.Uint64(), rng.Uint64()
				}
				return keys[(i*7919)%bc.keys], rng.Uint64() % bc.values
			}
			for i := range 200_000 {
				k, v := next(i)
				d.Add(k, v, now)
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cputime.Process()
			i := 0
			for b.Loop() {
				now += 1000
				k, v := next(i)
				d.Add(k, v, now)
				i++
			}
			reportCPU(b, cpu)
		})
	}
}

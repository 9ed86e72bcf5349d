package counting

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseAlgorithm(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Algorithm
		err  string
	}{
		{in: "", want: SlidingWindow},
		{in: "sliding_window", want: SlidingWindow},
		{in: "fixed_window", want: FixedWindow},
		{in: "sliding_log", want: SlidingLog},
		{in: "token_bucket", want: TokenBucket},
		{in: "gcra", want: GCRA},
		{in: "GCRA", err: "'sliding_window', 'fixed_window', 'sliding_log', 'token_bucket' or 'gcra'"},
		{in: "leaky_bucket", err: `unknown algorithm "leaky_bucket"`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseAlgorithm(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseAlgorithm(%q) error = %v, want one containing %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseAlgorithm(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			if tc.in != "" && got.String() != tc.in {
				t.Errorf("String() = %q, want %q", got.String(), tc.in)
			}
		})
	}
	if got := Algorithm(200).String(); got != "other" {
		t.Errorf("Algorithm(200).String() = %q, want other", got)
	}
}

func TestNewTableValidates(t *testing.T) {
	ok := Limit{Period: time.Minute, Requests: 10}
	for _, tc := range []struct {
		name string
		cfg  Config
		err  string // "" = valid
	}{
		{name: "defaults", cfg: Config{Limit: ok}},
		{name: "zero limit", cfg: Config{}, err: "period 0s"},
		{name: "negative period", cfg: Config{Limit: Limit{Period: -1, Requests: 1}}, err: "period -1ns"},
		{name: "period too long", cfg: Config{Limit: Limit{Period: MaxPeriod + 1, Requests: 1}}, err: "must be > 0 and <="},
		{name: "zero requests", cfg: Config{Limit: Limit{Period: time.Second}}, err: "requests 0"},
		{name: "NaN requests", cfg: Config{Limit: Limit{Period: time.Second, Requests: nanF()}}, err: "requests NaN"},
		{name: "infinite requests", cfg: Config{Limit: Limit{Period: time.Second, Requests: infF()}}, err: "requests +Inf"},
		{name: "unknown algorithm", cfg: Config{Limit: Limit{Algorithm: 9, Period: time.Second, Requests: 1}}, err: "unknown algorithm 9"},
		{name: "sliding log too large", cfg: Config{Limit: Limit{Algorithm: SlidingLog, Period: time.Second, Requests: 1025}}, err: "at most 1024"},
		{name: "sliding log largest", cfg: Config{Limit: Limit{Algorithm: SlidingLog, Period: time.Second, Requests: 1024}}},
		{name: "gcra interval under 1ns", cfg: Config{Limit: Limit{Algorithm: GCRA, Period: time.Second, Requests: 2e9}}, err: "under a nanosecond"},
		{name: "negative max keys", cfg: Config{Limit: ok, MaxKeys: -1}, err: "max keys -1"},
		{name: "negative shards", cfg: Config{Limit: ok, Shards: -1}, err: "shards -1"},
		{name: "shards above max keys", cfg: Config{Limit: ok, MaxKeys: 4, Shards: 8}, err: "more than max keys"},
		{name: "one key", cfg: Config{Limit: ok, MaxKeys: 1}},
		{name: "odd shards", cfg: Config{Limit: ok, MaxKeys: 5, Shards: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab, err := NewTable(tc.cfg)
			if tc.err == "" {
				if err != nil {
					t.Fatalf("NewTable: %v", err)
				}
				if tab.Limit() != tc.cfg.Limit {
					t.Errorf("Limit() = %+v, want %+v", tab.Limit(), tc.cfg.Limit)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "counting: ") {
				t.Fatalf("NewTable error = %v, want one starting with \"counting: \" containing %q", err, tc.err)
			}
		})
	}
}

func nanF() float64 { z := 0.0; return z / z }
func infF() float64 { z := 0.0; return 1 / z }

func TestHash(t *testing.T) {
	// XXH64 with seed 0; these values are part of the contract with other
	// instances and must never change.
	for _, tc := range []struct {
		in   string
		want uint64
	}{
		{"", 0xef46db3751d8e999},
		{"a", 0xd24ec4f1a98c6e5b},
		{"203.0.113.7", HashString("203.0.113.7")},
	} {
		if got := Hash([]byte(tc.in)); got != tc.want {
			t.Errorf("Hash(%q) = %#x, want %#x", tc.in, got, tc.want)
		}
	}
}

func allAlgorithms() []Algorithm {
	return []Algorithm{SlidingWindow, FixedWindow, SlidingLog, TokenBucket, GCRA}
}

func TestBadSizes(t *testing.T) {
	for _, alg := range allAlgorithms() {
		t.Run(alg.String(), func(t *testing.T) {
			tab, err := NewTable(Config{Limit: Limit{Algorithm: alg, Period: time.Second, Requests: 5}})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []float64{0, -1, nanF(), infF(), -infF()} {
				r := tab.Add(1, n, t0)
				if r != (Result{Remaining: 5}) {
					t.Errorf("Add(n=%v) = %+v, want an unused key", n, r)
				}
			}
			if tab.Len() != 0 {
				t.Errorf("Len() = %d after adds of nothing, want 0", tab.Len())
			}
			// Key 0 is a key like any other.
			if r := tab.Add(0, 1, t0); r.Count != 1 || tab.Peek(0, t0).Count != 1 {
				t.Errorf("key 0: Add = %+v, Peek = %+v", r, tab.Peek(0, t0))
			}
		})
	}
}

// TestCapAndSweep fills tables of every algorithm past their cap, then lets
// every key idle out.
func TestCapAndSweep(t *testing.T) {
	for _, alg := range allAlgorithms() {
		t.Run(alg.String(), func(t *testing.T) {
			const maxKeys = 1000
			tab, err := NewTable(Config{Limit: Limit{Algorithm: alg, Period: time.Second, Requests: 10}, MaxKeys: maxKeys})
			if err != nil {
				t.Fatal(err)
			}
			heavy := uint64(7)
			now := t0
			for i := range 20000 {
				now += int64(time.Microsecond)
				tab.Add(uint64(i)+100, 1, now)
				if i%10 == 0 {
					tab.Add(heavy, 1, now)
				}
				if tab.Len() > maxKeys {
					t.Fatalf("Len() = %d > %d after %d keys", tab.Len(), maxKeys, i+1)
				}
			}
			if got := tab.Evictions(); got < 20000-maxKeys {
				t.Errorf("Evictions() = %d, want at least %d", got, 20000-maxKeys)
			}
			if r := tab.Peek(heavy, now); r.Count < 1 {
				t.Errorf("heavy key evicted: Peek = %+v", r)
			}
			if n := tab.Sweep(now); n != 0 {
				t.Errorf("Sweep(now) dropped %d fresh keys", n)
			}
			n := tab.Len()
			later := now + int64(2*time.Second) + int64(time.Second) + 1
			if got := tab.Sweep(later); got != n || tab.Len() != 0 {
				t.Errorf("Sweep(3s later) = %d with %d keys left, want %d and 0", got, tab.Len(), n)
			}
			// The table works after being emptied.
			if r := tab.Add(heavy, 1, later); r.Count != 1 || tab.Len() != 1 {
				t.Errorf("Add after sweep = %+v, Len %d", r, tab.Len())
			}
		})
	}
}

// TestHugeSizes fills a capped table with keys whose counts overflow to
// +Inf: eviction must still make room (a shard that cannot evict would fill
// and never find an empty slot again).
func TestHugeSizes(t *testing.T) {
	for _, alg := range allAlgorithms() {
		t.Run(alg.String(), func(t *testing.T) {
			tab, err := NewTable(Config{Limit: Limit{Algorithm: alg, Period: time.Second, Requests: 10}, MaxKeys: 16, Shards: 1})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 200 {
				r := tab.Add(uint64(i), 1e308, t0)
				tab.Add(uint64(i), 1e308, t0)
				if !r.Exceeded || r.RetryAfter <= 0 {
					t.Fatalf("Add(%d, 1e308) = %+v", i, r)
				}
			}
			if n := tab.Len(); n > 16 {
				t.Fatalf("Len() = %d, above the cap", n)
			}
		})
	}
}

// TestTableMatchesMap drives random keys through a few rounds of event time,
// one window per round, sweeping after each, against a map of exact
// per-window counts: partial sweeps exercise backward-shift deletion in the
// middle of probe runs.
func TestTableMatchesMap(t *testing.T) {
	period := time.Second
	tab, err := NewTable(Config{Limit: Limit{Algorithm: FixedWindow, Period: period, Requests: 1e9}, MaxKeys: 1 << 16, Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	type state struct {
		window int // round of the last event
		count  float64
	}
	want := map[uint64]*state{}
	for round := range 40 {
		now := t0 + int64(round)*int64(period)
		// Keys drawn from a range that drifts, so older keys go idle.
		for range 1500 {
			k := uint64(round*100) + rng.Uint64N(3000)
			st := want[k]
			if st == nil {
				st = &state{}
				want[k] = st
			}
			if st.window != round {
				st.window, st.count = round, 0
			}
			st.count++
			if r := tab.Add(k, 1, now); r.Count != st.count {
				t.Fatalf("round %d: Add(%d).Count = %v, want %v", round, k, r.Count, st.count)
			}
		}
		expired := 0
		for k, st := range want {
			if round-st.window >= 3 {
				delete(want, k)
				expired++
			}
		}
		if got := tab.Sweep(now); got != expired {
			t.Fatalf("round %d: Sweep = %d, want %d", round, got, expired)
		}
		if tab.Len() != len(want) {
			t.Fatalf("round %d: Len() = %d, want %d", round, tab.Len(), len(want))
		}
		for k, st := range want {
			n := st.count
			if st.window != round {
				n = 0
			}
			if got := tab.Peek(k, now).Count; got != n {
				t.Fatalf("round %d: Peek(%d).Count = %v, want %v", round, k, got, n)
			}
		}
	}
}

func TestConcurrentAdd(t *testing.T) {
	tab, err := NewTable(Config{Limit: Limit{Period: time.Minute, Requests: 1e9}})
	if err != nil {
		t.Fatal(err)
	}
	const workers, keys, per = 4, 500, 20
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range keys * per {
				tab.Add(uint64(i%keys), 1, t0+int64(w))
			}
		})
	}
	// Readers and a sweeper alongside; nothing is idle, so nothing goes.
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				tab.Sweep(t0)
				tab.Peek(1, t0)
				_ = tab.Len() + int(tab.Evictions()+tab.Late())
			}
		}
	})
	wg.Wait()
	close(stop)
	readers.Wait()
	for k := range uint64(keys) {
		if got := tab.Peek(k, t0).Count; got != workers*per {
			t.Fatalf("key %d: Count = %v, want %d", k, got, workers*per)
		}
	}
}

func TestAddAllocatesNothing(t *testing.T) {
	for _, alg := range allAlgorithms() {
		t.Run(alg.String(), func(t *testing.T) {
			tab, err := NewTable(Config{Limit: Limit{Algorithm: alg, Period: time.Second, Requests: 10}, MaxKeys: 1024})
			if err != nil {
				t.Fatal(err)
			}
			keys := make([]uint64, 4096) // 4x the cap: evictions included
			for i := range keys {
				keys[i] = rand.Uint64()
			}
			now, i := t0, 0
			op := func() {
				now += 1000
				tab.Add(keys[i%len(keys)], 1, now)
				tab.Peek(keys[(i+7)%len(keys)], now)
				i++
			}
			for range 3 * len(keys) { // grow every shard to its cap first
				op()
			}
			if n := testing.AllocsPerRun(10000, op); n != 0 {
				t.Errorf("Add+Peek: %v allocs per run, want 0", n)
			}
		})
	}
}

func TestForget(t *testing.T) {
	for _, alg := range allAlgorithms() {
		t.Run(alg.String(), func(t *testing.T) {
			tab, err := NewTable(Config{Limit: Limit{Algorithm: alg, Period: time.Minute, Requests: 3}})
			if err != nil {
				t.Fatal(err)
			}
			// Keys that share a probe run stay findable after one is forgotten.
			for k := uint64(1); k <= 50; k++ {
				for range 5 {
					tab.Add(k, 1, t0)
				}
			}
			if !tab.Forget(7) || tab.Forget(7) || tab.Len() != 49 {
				t.Fatalf("Forget: Len %d", tab.Len())
			}
			if r := tab.Peek(7, t0); r.Count != 0 || r.Exceeded {
				t.Errorf("forgotten key reads %+v", r)
			}
			for k := uint64(1); k <= 50; k++ {
				if r := tab.Peek(k, t0); k != 7 && !r.Exceeded {
					t.Errorf("key %d lost its count: %+v", k, r)
				}
			}
			if r := tab.Add(7, 1, t0); r.Exceeded {
				t.Errorf("a forgotten key starts over: %+v", r)
			}
		})
	}
}

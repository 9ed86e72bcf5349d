package redis

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/guardd/guardd/counting"
)

// sketchFake is fakeStore with MergeSketches: luaSketch's merge done by
// counting.Sketch.Union over a map (TestSketchScriptMatchesUnion checks
// the two agree on a real server).
type sketchFake struct {
	*fakeStore
	smu sync.Mutex
	m   map[string]counting.Sketch
}

func newSketchFake(now time.Time) *sketchFake {
	return &sketchFake{fakeStore: newFakeStore(now), m: map[string]counting.Sketch{}}
}

func (s *sketchFake) MergeSketches(_ context.Context, ops []SketchOp, replies [][2][]byte, errs []error) error {
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.fail != nil {
		for i := range errs {
			errs[i] = s.fail
		}
		return s.fail
	}
	for i, o := range ops {
		for w := range 2 {
			cur := s.m[o.Key[w]]
			if o.Send[w] != nil {
				var a counting.Sketch
				if err := a.UnmarshalBinary(o.Send[w]); err != nil {
					errs[i] = err
					return err
				}
				cur.Union(&a)
				s.m[o.Key[w]] = cur
			}
			if !cur.Empty() {
				replies[i][w], _ = cur.AppendBinary(nil)
			}
		}
	}
	return nil
}

// distinctPair is two nodes of one fleet on a sketchFake, one distinct
// rule each, on one clock.
func distinctPair(tb testing.TB, limit float64) (a, b *DistinctCounter, now *int64) {
	tb.Helper()
	t0 := time.Date(2026, 11, 28, 12, 0, 10, 0, time.UTC)
	store := newSketchFake(t0)
	n := t0.UnixNano()
	now = &n
	var out [2]*DistinctCounter
	for i := range out {
		f, err := New(Config{Node: string(rune('a' + i)), Deadline: 5 * time.Second, Now: func() time.Time { return time.Unix(0, *now) }}, store, nil, nil)
		if err != nil {
			tb.Fatal(err)
		}
		local, err := counting.NewDistinct(counting.DistinctConfig{Period: time.Minute, Limit: limit})
		if err != nil {
			tb.Fatal(err)
		}
		if out[i], err = f.Distinct(DistinctRule{Name: "r"}, local, DistinctConfig{}); err != nil {
			tb.Fatal(err)
		}
	}
	return out[0], out[1], now
}

// TestDistinctAddAllocs: AddDistinct allocates nothing for a known key,
// whether the fleet knows nothing more than this node (the fast path) or
// its sketches are merged into the answer.
func TestDistinctAddAllocs(t *testing.T) {
	a, b, now := distinctPair(t, 1000)
	for v := range uint64(40) {
		a.AddDistinct(1, v, *now)
		b.AddDistinct(1, v+1000, *now)
		a.AddDistinct(2, v, *now)
	}
	ctx := context.Background()
	b.f.FlushDistinct(ctx)
	a.f.FlushDistinct(ctx)
	if r := a.Peek(1, *now); r.Count < 70 {
		t.Fatalf("key 1 on a after both flushed: %+v, want both nodes' 80 values", r)
	}
	for _, tc := range []struct {
		name string
		key  uint64
	}{{"fleet adds nothing", 2}, {"merged with the fleet's", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			v := uint64(0)
			if n := testing.AllocsPerRun(1000, func() {
				a.AddDistinct(tc.key, v%40, *now)
				v++
			}); n != 0 {
				t.Errorf("%v allocs per AddDistinct", n)
			}
		})
	}
}

func BenchmarkDistinctAdd(b *testing.B) {
	for _, bc := range []struct {
		name string
		add  func(c *DistinctCounter, key, v uint64, now int64) counting.Result
		key  uint64
	}{
		{"local table", func(c *DistinctCounter, key, v uint64, now int64) counting.Result { return c.Local().Add(key, v, now) }, 2},
		{"fleet, nothing more known", (*DistinctCounter).AddDistinct, 2},
		{"fleet, merged", (*DistinctCounter).AddDistinct, 1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c, o, now := distinctPair(b, 1000)
			for v := range uint64(200) {
				c.AddDistinct(1, v, *now)
				o.AddDistinct(1, v+1000, *now)
				c.AddDistinct(2, v, *now)
			}
			o.f.FlushDistinct(context.Background())
			c.f.FlushDistinct(context.Background())
			b.ReportAllocs()
			v := uint64(0)
			for b.Loop() {
				bc.add(c, bc.key, v%200, *now)
				v++
			}
		})
	}
}

// BenchmarkDistinctAddMany: 10,000 clients with two values each, and 16
// sites counting distinct clients, as bench/fleetbench's distinct run,
// with flushes to an in-process store every 50 ms.
func BenchmarkDistinctAddMany(b *testing.B) {
	const distinctBenchKeys = 10_000
	for _, fleet := range []bool{false, true} {
		b.Run(map[bool]string{false: "local", true: "fleet"}[fleet], func(b *testing.B) {
			ua, o, now := distinctPair(b, 5)
			pr, _, _ := distinctPair(b, 1000)
			for k := range uint64(distinctBenchKeys) {
				o.AddDistinct(k, k<<1, *now)
			}
			o.f.FlushDistinct(context.Background())
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				tk := time.NewTicker(50 * time.Millisecond)
				defer tk.Stop()
				for {
					select {
					case <-ctx.Done():
						return
					case <-tk.C:
						ua.f.FlushDistinct(ctx)
						pr.f.FlushDistinct(ctx)
					}
				}
			}()
			b.ReportAllocs()
			r := uint64(1)
			for b.Loop() {
				r = r*6364136223846793005 + 1442695040888963407
				k := (r >> 33) % distinctBenchKeys
				v := k<<1 | r>>63
				if fleet {
					ua.AddDistinct(k, v, *now)
					pr.AddDistinct(k%16, k, *now)
				} else {
					ua.Local().Add(k, v, *now)
					pr.Local().Add(k%16, k, *now)
				}
			}
			cancel()
			<-done
		})
	}
}

// TestDistinctConcurrent: AddDistinct from several goroutines on two
// nodes while both flush (run with -race). Once all is flushed, the
// fleet's sketch of each key is the one-node sketch of every value, and
// each node's answer lies between its own count and that.
func TestDistinctConcurrent(t *testing.T) {
	a, b, now := distinctPair(t, 1e6)
	ctx := context.Background()
	var stop atomic.Bool // not a cancelled context: a flush cut short is a failure for the breaker
	var flushes sync.WaitGroup
	for _, c := range []*DistinctCounter{a, b} {
		flushes.Add(1)
		go func() {
			defer flushes.Done()
			for !stop.Load() {
				c.f.FlushDistinct(ctx)
			}
		}()
	}
	var adds sync.WaitGroup
	for g := range 4 {
		adds.Add(1)
		go func() {
			defer adds.Done()
			c := []*DistinctCounter{a, b}[g%2]
			for i := range uint64(3000) {
				c.AddDistinct(i%7+1, uint64(g)<<32|i, *now)
			}
		}()
	}
	adds.Wait()
	stop.Store(true)
	flushes.Wait()
	a.f.FlushDistinct(ctx)
	b.f.FlushDistinct(ctx)
	one, _ := counting.NewDistinct(counting.DistinctConfig{Period: time.Minute, Limit: 1e6})
	for g := range 4 {
		for i := range uint64(3000) {
			one.Add(i%7+1, uint64(g)<<32|i, *now)
		}
	}
	store := a.f.store.(*sketchFake)
	for k := uint64(1); k <= 7; k++ {
		var want, prev counting.Sketch
		start, _ := one.Sketches(k, *now, &want, &prev)
		store.smu.Lock()
		got := store.m[a.sketchKey(k, start)]
		store.smu.Unlock()
		if !got.Covers(&want) || !want.Covers(&got) {
			t.Errorf("key %d: the fleet's sketch %v, one node's %v", k, got.Estimate(), want.Estimate())
		}
		for i, c := range []*DistinctCounter{a, b} {
			if r, own := c.Peek(k, *now), c.Local().Peek(k, *now); r.Count < own.Count || r.Count > want.Estimate()+1e-3 {
				t.Errorf("key %d node %d: %v, not between its own %v and the fleet's %v", k, i, r.Count, own.Count, want.Estimate())
			}
		}
	}
}

// TestDistinctEviction: past MaxKeys a shard drops a key, which answers
// from the local table; the counter stays at its cap.
func TestDistinctEviction(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 10, 0, time.UTC)
	f, err := New(Config{Node: "a", Now: func() time.Time { return t0 }}, newSketchFake(t0), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	local, _ := counting.NewDistinct(counting.DistinctConfig{Period: time.Minute, Limit: 3})
	c, err := f.Distinct(DistinctRule{Name: "r"}, local, DistinctConfig{MaxKeys: 64})
	if err != nil {
		t.Fatal(err)
	}
	for k := range uint64(1000) {
		if r := c.AddDistinct(k+1, k, t0.UnixNano()+int64(k)); r.Count != 1 {
			t.Fatalf("key %d: %+v", k+1, r)
		}
	}
	if n := c.Len(); n > 64 {
		t.Errorf("%d keys kept, cap 64", n)
	}
	f.FlushDistinct(context.Background())
}

// TestDistinctWindowsFleet: a distinct rule with two windows (as
// scan_404) on two nodes, each window shared under its own name; once
// both have flushed, each node judges a key as counting.Windows does on
// one node that saw every value.
func TestDistinctWindowsFleet(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 10, 0, time.UTC)
	clock := t0
	store := newSketchFake(t0)
	wins := []counting.Window{{Period: 5 * time.Minute, Requests: 40}, {Period: time.Hour, Requests: 120}}
	var nodes []*DistinctWindows
	for i := range 2 {
		f, err := New(Config{Node: string(rune('a' + i)), Deadline: 5 * time.Second, Now: func() time.Time { return clock }}, store, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		local, err := counting.NewWindows(counting.SlidingWindow, wins, true, 0)
		if err != nil {
			t.Fatal(err)
		}
		var cs []*DistinctCounter
		for _, d := range local.DistinctTables() {
			c, err := f.Distinct(DistinctRule{Name: "scan/" + time.Duration(d.Period()).String()}, d, DistinctConfig{})
			if err != nil {
				t.Fatal(err)
			}
			cs = append(cs, c)
		}
		nodes = append(nodes, NewDistinctWindows(cs...))
	}
	ctx := context.Background()
	for range 2 { // heartbeats: both nodes see two live (a key is near at limit/nodes)
		for _, n := range nodes {
			n.Counters()[0].f.Flush(ctx)
		}
		clock = clock.Add(DefaultNodeTTL / 2)
		store.setNow(clock)
	}
	one, _ := counting.NewWindows(counting.SlidingWindow, wins, true, 0)
	now := clock.UnixNano()
	for v := range uint64(42) { // 21 paths on each node: under 40 on both
		if r := nodes[v%2].AddDistinct(9, v, now); r.Exceeded {
			t.Fatalf("node %d alone over the limit at value %d", v%2, v)
		}
		one.AddDistinct(9, v, now)
	}
	for range 2 {
		for _, n := range nodes {
			n.Counters()[0].f.FlushDistinct(ctx)
		}
	}
	want := one.AddDistinct(9, 0, now)
	if !want.Exceeded {
		t.Fatalf("one node: %+v, want over the limit (the test's premise)", want)
	}
	for i, n := range nodes {
		if got := n.AddDistinct(9, uint64(i), now); got != want {
			t.Errorf("node %d: %+v, one node %+v", i, got, want)
		}
	}
}

// TestDistinctEvictedKeyAnswer: the answer to a flush of a key that was
// dropped from a full shard and made again meanwhile is not kept for the
// new entry (its generation differs), and the views of dropped keys are
// used again rather than grown.
func TestDistinctEvictedKeyAnswer(t *testing.T) {
	a, b, now := distinctPair(t, 1000)
	for v := range uint64(50) {
		b.AddDistinct(1, v+1000, *now)
	}
	b.f.FlushDistinct(context.Background())
	a.AddDistinct(1, 1, *now)
	var ops []SketchOp
	var refs []dref
	ops, refs = a.collect(ops, refs, *now, 2)
	if len(refs) != 1 {
		t.Fatalf("%d ops, want 1", len(refs))
	}
	rep := make([][2][]byte, 1)
	if err := b.f.store.(SketchStore).MergeSketches(context.Background(), ops, rep, make([]error, 1)); err != nil {
		t.Fatal(err)
	}
	sh := a.keys.For(refs[0].key)
	sh.Lock()
	views := len(sh.Ext.views)
	sh.Delete(releaseLocked(sh, sh.Lookup(refs[0].key))) // as an eviction does
	sh.Unlock()
	a.AddDistinct(1, 2, *now) // made again
	a.settle(refs[0], rep[0], true)
	if r := a.Peek(1, *now); r.Count != 2 {
		t.Errorf("after a stale answer: count %v, want the local 2", r.Count)
	}
	sh.Lock()
	defer sh.Unlock()
	if len(sh.Ext.views) != views {
		t.Errorf("%d views after a key was made again, want %d", len(sh.Ext.views), views)
	}
}

// TestRuleNameBraces: a rule whose name holds a brace is refused, naming
// the rule: its keys would not share a Redis Cluster slot.
func TestRuleNameBraces(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 10, 0, time.UTC)
	f, err := New(Config{Node: "a", Now: func() time.Time { return t0 }}, newSketchFake(t0), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	local, _ := counting.NewDistinct(counting.DistinctConfig{Period: time.Minute, Limit: 3})
	for _, name := range []string{"a{b", "}x", "{}", "x}"} {
		_, err := f.Counter(Rule{Name: name, Limit: counting.Limit{Period: time.Minute, Requests: 10}})
		if err == nil || !strings.Contains(err.Error(), strconv.Quote(name)) || !strings.Contains(err.Error(), "'{' or '}'") {
			t.Errorf("Counter %q: %v", name, err)
		}
		_, err = f.Distinct(DistinctRule{Name: name}, local, DistinctConfig{})
		if err == nil || !strings.Contains(err.Error(), strconv.Quote(name)) {
			t.Errorf("Distinct %q: %v", name, err)
		}
	}
	if _, err := f.Distinct(DistinctRule{Name: "ok/10m0s"}, local, DistinctConfig{}); err != nil {
		t.Error(err)
	}
}

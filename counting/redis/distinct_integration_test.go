//go:build integration

package redis

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/guardd/guardd/counting"
	"github.com/guardd/guardd/counting/redis/redistest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// distinctNode is one node of a distinct test: its fleet, the rule's
// counter, and the clock both read.
type distinctNode struct {
	f   *Fleet
	c   *DistinctCounter
	reg *prometheus.Registry
}

// startDistinctNodes makes n fleets against opt, each with one distinct
// rule (period, limit), on a clock the test sets.
func startDistinctNodes(t *testing.T, opt Options, n int, period time.Duration, limit float64, clock *atomic.Int64, cfg Config) []distinctNode {
	t.Helper()
	var out []distinctNode
	for i := range n {
		reg := prometheus.NewRegistry()
		cfg := cfg
		cfg.Node = "d" + string(rune('a'+i))
		cfg.Now = func() time.Time { return time.Unix(0, clock.Load()) }
		if cfg.Deadline == 0 {
			cfg.Deadline = 2 * time.Second // a loaded test machine; the breaker has its own tests
		}
		f, err := New(cfg, dial(t, opt), reg, nil)
		if err != nil {
			t.Fatal(err)
		}
		local, err := counting.NewDistinct(counting.DistinctConfig{Period: period, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		c, err := f.Distinct(DistinctRule{Name: "campaign"}, local, DistinctConfig{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, distinctNode{f: f, c: c, reg: reg})
	}
	return out
}

// TestDistinctFleetThreeNodes: three nodes against one redis-server each
// see a third of the distinct values of one key, none of them enough to
// cross the limit alone. After one flush of each node the last to flush
// answers as one node that saw every value would (the same count: the
// merged sketch is the one table's), and after one more flush every node
// is over the limit too, without a new event; a repeat of a known value
// then trips on every node.
func TestDistinctFleetThreeNodes(t *testing.T) {
	srv := redistest.Start(t, 0)
	const period = time.Minute
	for _, tc := range []struct {
		name   string
		limit  float64
		values int // over the three nodes
	}{
		{"one address per node", 2, 3},           // form_campaign: 2 per 10m, each node one
		{"exact", 40, 60},                        // fingerprints: exact counts
		{"registers", 200, 300},                  // HyperLogLog registers
		{"registers, previous window", 150, 240}, // half the values a window earlier
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv.Cmd("FLUSHALL")
			var clock atomic.Int64
			base := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC).UnixNano()
			clock.Store(base + int64(period)/2)
			nodes := startDistinctNodes(t, Options{Addresses: []string{srv.Addr}}, 3, period, tc.limit, &clock, Config{})
			ctx := context.Background()
			for _, n := range nodes { // heartbeats: every node sees three live
				n.f.Flush(ctx)
			}
			clock.Add(int64(DefaultNodeTTL)) // the next flush beats again
			for _, n := range nodes {
				n.f.Flush(ctx)
				if got := n.f.Status().LiveNodes; got != 3 {
					t.Fatalf("%s sees %d live nodes", n.f.cfg.Node, got)
				}
			}
			one, _ := counting.NewDistinct(counting.DistinctConfig{Period: period, Limit: tc.limit})
			rng := rand.New(rand.NewPCG(uint64(tc.values), 3))
			const key = 0xc0ffee
			var last [3]uint64 // each node's last value, in the current window
			for i := range tc.values {
				at := clock.Load()
				if tc.name == "registers, previous window" && i < tc.values/2 {
					at -= int64(period) // the previous window
				}
				v := rng.Uint64()
				last[i%3] = v
				one.Add(key, v, at)
				if r := nodes[i%3].c.AddDistinct(key, v, at); r.Exceeded {
					t.Fatalf("node %d crossed the limit alone at value %d: %+v (the test's premise)", i%3, i, r)
				}
			}
			now := clock.Load()
			want := one.Peek(key, now)
			if !want.Exceeded {
				t.Fatalf("one node seeing every value does not cross the limit: %+v (the test's premise)", want)
			}
			for _, n := range nodes {
				n.f.FlushDistinct(ctx)
			}
			same := func(r counting.Result) bool {
				return r.Exceeded && math.Abs(r.Count-want.Count) < 1e-3
			}
			if got := nodes[2].c.Peek(key, now); !same(got) {
				t.Errorf("last node to flush: %+v, one node seeing all: %+v", got, want)
			}
			if got := nodes[0].c.Peek(key, now); got.Exceeded {
				t.Errorf("first node to flush knows the others' values before they flushed: %+v", got)
			}
			for _, n := range nodes {
				n.f.FlushDistinct(ctx)
			}
			// Every node now answers over the limit. A node already over
			// it after the first flush reads nothing more (it has tripped),
			// so its count may stay under the one node's.
			same = func(r counting.Result) bool {
				return r.Exceeded && r.Count <= want.Count+1e-3
			}
			for i, n := range nodes {
				if got := n.c.Peek(key, now); !same(got) {
					t.Errorf("node %d after a second flush: %+v, one node seeing all: %+v", i, got, want)
				}
				if got := n.c.AddDistinct(key, last[i], now); !same(got) {
					t.Errorf("node %d, a known value again: %+v, want %+v", i, got, want)
				}
			}
			if t.Failed() {
				return
			}
			// A key far from its limit is read back only when it changes:
			// a third round of flushes with no new value reads the keys
			// near it, and writes nothing.
			w0 := testutil.ToFloat64(nodes[0].f.dist.met.keys.WithLabelValues("write"))
			for _, n := range nodes {
				n.f.FlushDistinct(ctx)
			}
			if w := testutil.ToFloat64(nodes[0].f.dist.met.keys.WithLabelValues("write")); w != w0 {
				t.Errorf("a flush without new values wrote %v keys", w-w0)
			}
		})
	}
}

// TestDistinctFleetRedisDown: with Redis killed, AddDistinct answers the
// local count at once, flushes fail without touching the hot path, and
// the breaker opens; when Redis is back the values counted meanwhile reach
// it and the nodes see each other's.
func TestDistinctFleetRedisDown(t *testing.T) {
	srv := redistest.Start(t, 0)
	const period = time.Minute
	var clock atomic.Int64
	clock.Store(time.Date(2026, 11, 28, 12, 0, 5, 0, time.UTC).UnixNano())
	nodes := startDistinctNodes(t, Options{Addresses: []string{srv.Addr}}, 2, period, 10, &clock,
		Config{Deadline: 200 * time.Millisecond, Cooldown: 50 * time.Millisecond})
	ctx := context.Background()
	for range 2 { // heartbeats: both nodes see two live
		for _, n := range nodes {
			n.f.Flush(ctx)
		}
		clock.Add(int64(DefaultNodeTTL))
	}
	srv.Kill()
	for i := range 8 {
		now := clock.Load()
		v := uint64(i) * 0x9e3779b97f4a7c15
		t0 := time.Now()
		got := nodes[0].c.AddDistinct(1, v, now)
		if d := time.Since(t0); d > 50*time.Millisecond {
			t.Errorf("AddDistinct took %v with Redis down", d)
		}
		if want := nodes[0].c.Local().Peek(1, now); got != want {
			t.Errorf("value %d: %+v, local count %+v", i, got, want)
		}
		nodes[1].c.AddDistinct(1, v+1, now) // the other node's own values
	}
	for range 4 {
		for _, n := range nodes {
			n.f.FlushDistinct(ctx)
		}
	}
	if s := nodes[0].f.eps.top.Load().eps[0].br.State(); s != BreakerOpen {
		t.Errorf("breaker %v after failed flushes, want open", s)
	}
	if r := nodes[0].c.Peek(1, clock.Load()); r.Count != 8 || r.Exceeded {
		t.Errorf("Redis down: %+v, want the local 8", r)
	}
	srv.Restart()
	redistest.WaitFor(t, 10*time.Second, "both nodes' values merged", func() bool {
		clock.Add(int64(60 * time.Millisecond)) // the breakers' cool-down passes on the test's clock
		for _, n := range nodes {
			n.f.FlushDistinct(ctx)
		}
		r0, r1 := nodes[0].c.Peek(1, clock.Load()), nodes[1].c.Peek(1, clock.Load())
		return r0.Count == 16 && r1.Count == 16 && r0.Exceeded && r1.Exceeded
	})
}

// TestSketchScriptMatchesUnion: the Lua merge gives the sketch Go's Union
// does, across the exact and register forms and the move between them.
func TestSketchScriptMatchesUnion(t *testing.T) {
	srv := redistest.Start(t, 0)
	c := dial(t, Options{Addresses: []string{srv.Addr}})
	ctx := context.Background()
	sketch := func(seed uint64, n int) counting.Sketch {
		d, _ := counting.NewDistinct(counting.DistinctConfig{Period: time.Minute, Limit: 1})
		rng := rand.New(rand.NewPCG(seed, 1))
		for range n {
			d.Add(1, rng.Uint64()%uint64(2*n+1), 1) // overlapping sets between seeds
		}
		var s, p counting.Sketch
		d.Sketches(1, 1, &s, &p)
		return s
	}
	sizes := []int{1, 3, 16, 31, 32, 33, 60, 500}
	i := 0
	for _, na := range sizes {
		for _, nb := range sizes {
			i++
			a, b := sketch(uint64(i), na), sketch(uint64(i)+1000, nb)
			ab, _ := a.AppendBinary(nil)
			bb, _ := b.AppendBinary(nil)
			key := "guardd:{lua:" + string(rune('a'+i%26)) + "}:d" + string(rune('0'+i%10))
			srv.Cmd("DEL", key, key+"p")
			rep, errs := make([][2][]byte, 1), make([]error, 1)
			for _, send := range [][]byte{ab, bb} {
				ops := []SketchOp{{Key: [2]string{key, key + "p"}, Send: [2][]byte{send, nil}, TTL: 60000}}
				if err := c.MergeSketches(ctx, ops, rep, errs); err != nil {
					t.Fatal(err)
				}
			}
			var got counting.Sketch
			if err := got.UnmarshalBinary(rep[0][0]); err != nil {
				t.Fatalf("%d ∪ %d: %v", na, nb, err)
			}
			want := a
			want.Union(&b)
			n, exact := want.Exact()
			gn, gexact := got.Exact()
			if n != gn || exact != gexact || !got.Covers(&want) || !want.Covers(&got) {
				t.Errorf("%d ∪ %d: Lua %v (%d, exact %v), Go %v (%d, exact %v)", na, nb, got.Estimate(), gn, gexact, want.Estimate(), n, exact)
			}
			if !exact {
				wb, _ := want.AppendBinary(nil)
				if !bytes.Equal(wb, rep[0][0]) {
					t.Errorf("%d ∪ %d: registers differ", na, nb)
				}
			}
			if len(rep[0][1]) != 0 {
				t.Errorf("%d ∪ %d: a window read only came back %q", na, nb, rep[0][1])
			}
			if ttl, _ := srv.Cmd("PTTL", key); ttl == "-1" {
				t.Errorf("%s has no TTL", key)
			}
		}
	}
}

// TestDistinctFleetCluster: TestDistinctFleetThreeNodes against a Redis
// Cluster of three masters (redis-cli --cluster create). Each script's two
// window keys share their hash tag {<rule>:<key>}, so no merge fails with
// CROSSSLOT; the rule's keys spread over every master; and a key whose
// values are spread over the three nodes, none enough alone, is over its
// limit on every node after two flushes.
func TestDistinctFleetCluster(t *testing.T) {
	cl := redistest.Cluster(t)
	var addrs []string
	for _, s := range cl {
		addrs = append(addrs, s.Addr)
	}
	const (
		period = time.Minute
		limit  = 6
		keys   = 60
	)
	var clock atomic.Int64
	clock.Store(time.Date(2026, 11, 28, 12, 0, 30, 0, time.UTC).UnixNano())
	nodes := startDistinctNodes(t, Options{Addresses: addrs, Mode: Cluster}, 3, period, limit, &clock, Config{})
	ctx := context.Background()
	for range 2 { // heartbeats: every node sees three live
		for _, n := range nodes {
			n.f.Flush(ctx)
		}
		clock.Add(int64(DefaultNodeTTL))
	}
	for _, n := range nodes {
		if got := n.f.Status().LiveNodes; got != 3 {
			t.Fatalf("%s sees %d live nodes", n.f.cfg.Node, got)
		}
	}
	now := clock.Load()
	for k := range uint64(keys) {
		for i := range uint64(9) { // three values per node, limit 6
			if r := nodes[i%3].c.AddDistinct(k+1, k<<8|i, now); r.Exceeded {
				t.Fatalf("key %d: node %d crossed the limit alone: %+v (the test's premise)", k+1, i%3, r)
			}
		}
	}
	for range 2 {
		for _, n := range nodes {
			n.f.FlushDistinct(ctx)
		}
	}
	for i, n := range nodes {
		for _, outcome := range []string{"error", "timeout", "skipped"} {
			if v := testutil.ToFloat64(n.f.dist.met.flushes.WithLabelValues(outcome)); v != 0 {
				t.Errorf("node %d: %v flushes %s", i, v, outcome)
			}
		}
		if v := testutil.ToFloat64(n.f.dist.met.flushes.WithLabelValues("ok")); v < 3 {
			t.Errorf("node %d: %v flushes ok, want one per master at least", i, v)
		}
		for k := range uint64(keys) {
			if r := n.c.Peek(k+1, now); !r.Exceeded || r.Count < limit {
				t.Errorf("node %d key %d: %+v, want over %d", i, k+1, r, limit)
			}
		}
	}
	for i, s := range cl {
		if n, err := s.Cmd("DBSIZE"); err != nil || n == "0" {
			t.Errorf("master %d holds %s keys (%v): the rule's keys are not spread", i, n, err)
		}
	}
}

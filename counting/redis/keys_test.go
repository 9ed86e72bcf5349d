package redis

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/guardd/guardd/counting"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// checkShards verifies each shard's table: n counts the occupied slots, and
// every key is found from its home (no probe run broken by a deletion).
func checkShards(t *testing.T, c *Counter) int {
	t.Helper()
	total := 0
	shards := c.keys.Shards()
	for si := range shards {
		sh := &shards[si]
		sh.Lock()
		n := 0
		for i := range sh.All() {
			k := sh.Key(i)
			n++
			if j := sh.Lookup(k); j != i {
				t.Errorf("shard %d: key %x in slot %d found at %d", si, k, i, j)
			}
			if c.keys.For(k) != sh {
				t.Errorf("key %x in shard %d, not its own", k, si)
			}
		}
		if n != sh.Len() {
			t.Errorf("shard %d: %d keys in slots, Len = %d", si, n, sh.Len())
		}
		total += n
		sh.Unlock()
	}
	return total
}

// TestLedgersSurviveMovesAndForgetting: keys come and go (forgotten after
// two idle periods, which shifts the slots after them back) and shards
// grow, and every key's events still reach its own Redis key, exactly: a
// detector counts every event, so the store's count of each key's window
// is the number of Adds.
func TestLedgersSurviveMovesAndForgetting(t *testing.T) {
	clock := t0
	st := newFakeStore(clock)
	f, err := New(Config{Node: "a", MaxKeys: 64 * 64, Now: func() time.Time { return clock }}, st, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := f.Counter(Rule{Name: "r", Limit: counting.Limit{Algorithm: counting.FixedWindow, Period: time.Second, Requests: 1e9}, Detection: true})
	rng := rand.New(rand.NewPCG(1, 2))
	universe := make([]uint64, 3000)
	for i := range universe {
		universe[i] = rng.Uint64() | 1
	}
	setNow := func(d time.Duration) {
		clock = clock.Add(d)
		st.setNow(clock)
	}
	setNow(time.Second - time.Duration(clock.UnixNano()%int64(time.Second))) // a window's start
	most := 0
	for sec := range 30 {
		// This second's 600 keys: a sliding part of the universe, so keys
		// of earlier seconds go idle and are forgotten.
		want := map[uint64]float64{}
		for step := range 19 { // 19 flush intervals inside the window
			for range 40 {
				k := universe[(sec*200+rng.IntN(600))%len(universe)]
				c.Add(k, 1, clock.UnixNano())
				want[k]++
			}
			f.Flush(context.Background())
			if step < 18 {
				setNow(50 * time.Millisecond)
			}
		}
		most = max(most, checkShards(t, c))
		st.mu.Lock()
		for k, n := range want {
			if got := st.state[c.redisKey(k)]; got.Cur != n || got.Win != clock.UnixMicro()/1e6 {
				t.Errorf("second %d key %x: Redis holds %v in window %d, want %v in %d", sec, k, got.Cur, got.Win, n, clock.UnixMicro()/1e6)
			}
		}
		st.mu.Unlock()
		setNow(time.Second - 18*50*time.Millisecond) // the next window's start
	}
	if n := checkShards(t, c); n >= most || n > 2000 {
		t.Errorf("%d keys held at the end (at most %d on the way): idle keys not forgotten", n, most)
	}
}

// TestLedgersFullShards: a flood of keys never seen again, more than
// MaxKeys, is judged (each as a new key) without growing the table past
// its cap; keys already held keep their ledgers.
func TestLedgersFullShards(t *testing.T) {
	clock := t0
	st := newFakeStore(clock)
	f, err := New(Config{Node: "a", MaxKeys: 64 * 8, Now: func() time.Time { return clock }}, st, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := f.Counter(Rule{Name: "r", Limit: counting.Limit{Period: time.Minute, Requests: 3}})
	now := clock.UnixNano()
	for range 3 {
		c.Add(0, 1, now) // key 0 is a key like the others
	}
	if r := c.Add(0, 1, now); !r.Exceeded {
		t.Fatalf("key 0: 4th event of 3 admitted: %+v", r)
	}
	for k := range uint64(100_000) {
		if r := c.Add(k*0x9e3779b97f4a7c15+1, 1, now); r.Exceeded {
			t.Fatalf("new key %d refused: %+v", k, r)
		}
	}
	if n := checkShards(t, c); n > 64*8 {
		t.Errorf("%d keys held, cap %d", n, 64*8)
	}
	if r := c.Add(0, 1, now); !r.Exceeded {
		t.Errorf("key 0 lost its count in the flood: %+v", r)
	}
}

// hookStore runs hook (once) inside the next Apply, before applying: what
// a request does while a flush is on the way to Redis.
type hookStore struct {
	*fakeStore
	hook func()
}

func (s *hookStore) Apply(ctx context.Context, ops []Op, states []State, errs []error) error {
	if h := s.hook; h != nil {
		s.hook = nil
		h()
	}
	return s.fakeStore.Apply(ctx, ops, states, errs)
}

// TestHeldLeaseAfterEmptyGrant: a key's second event arrives while its
// first grant is on the way, so it is counted beyond the lease and sent
// with the next flush, which holds almost the whole budget and is granted
// nothing more. The key still holds most of its lease: its next uses send
// no script (they used to send one each).
func TestHeldLeaseAfterEmptyGrant(t *testing.T) {
	clock := t0
	st := &hookStore{fakeStore: newFakeStore(clock)}
	f, err := New(Config{Node: "a", Now: func() time.Time { return clock }}, st, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := f.Counter(Rule{Name: "site", Limit: counting.Limit{Period: 10 * time.Minute, Requests: 600}})
	now := clock.UnixNano()
	c.Admit(5, 1, now)
	st.hook = func() { c.Admit(5, 1, now) }
	f.Flush(context.Background()) // grant 599; the hook's event is extra
	f.Flush(context.Background()) // the extra event, with 599 held: grant 0
	before := testutil.ToFloat64(f.met.keys)
	if before != 2 {
		t.Fatalf("%v scripts before, want 2", before)
	}
	for i := range 20 {
		if r := c.Admit(5, 1, now+int64(i+1)*int64(time.Millisecond)); r.Exceeded {
			t.Fatalf("event %d refused on a held lease: %+v", i, r)
		}
		f.Flush(context.Background())
	}
	if n := testutil.ToFloat64(f.met.keys) - before; n != 0 {
		t.Errorf("%v scripts for 20 events on a lease of 599", n)
	}
}

// TestFullPassDue: the once-a-second pass looks at a quiet key only when
// it is due: a window's lease when its window closes (and is handed back
// then), an idle key after two periods (forgotten, a shaper's lease with
// it), not at every pass.
func TestFullPassDue(t *testing.T) {
	for _, alg := range []counting.Algorithm{counting.SlidingWindow, counting.GCRA} {
		t.Run(alg.String(), func(t *testing.T) {
			clock := t0.Truncate(time.Minute)
			st := newFakeStore(clock)
			f, _ := newTestFleet(t, "a", st, &clock)
			c, _ := f.Counter(Rule{Name: "due", Limit: counting.Limit{Algorithm: alg, Period: time.Minute, Requests: 100, Burst: 100}})
			step := func(d time.Duration) {
				clock = clock.Add(d)
				st.setNow(clock)
				f.Flush(context.Background())
			}
			c.Add(3, 1, clock.UnixNano())
			step(0) // the grant
			step(time.Second)
			visited := func() bool {
				sh := c.keys.For(3)
				sh.Lock()
				defer sh.Unlock()
				i := sh.Lookup(3)
				return i >= 0 && sh.Side(i).pass == c.pass
			}
			scripts := testutil.ToFloat64(f.met.keys)
			for range 5 { // full passes inside the window
				step(fullEvery * DefaultFlushInterval)
				if visited() {
					t.Fatal("a quiet key holding a lease in its window was looked at")
				}
			}
			if n := testutil.ToFloat64(f.met.keys); n != scripts {
				t.Errorf("%v scripts for a quiet key", n-scripts)
			}
			step(time.Minute) // past the window
			if alg == counting.SlidingWindow && testutil.ToFloat64(f.met.keys) == scripts {
				t.Error("the lease of a closed window was not handed back")
			}
			step(2 * time.Minute)
			step(fullEvery * DefaultFlushInterval)
			if n := checkShards(t, c); n != 0 {
				t.Errorf("%d keys held after two idle periods", n)
			}
		})
	}
}

// TestShaperLeaseAtMostBurst: a lone node holding part of a gcra key's
// lease asks again once Redis has refilled the bucket, which then grants a
// full one. The node keeps at most the burst, so the burst that follows
// gets the burst (plus the one event a node may admit while a grant is on
// the way), not the burst plus what was held.
func TestShaperLeaseAtMostBurst(t *testing.T) {
	for _, alg := range []counting.Algorithm{counting.GCRA, counting.TokenBucket} {
		t.Run(alg.String(), func(t *testing.T) {
			n := newTestNode(t, t0)
			c := n.counter(t, Rule{Name: "b", Limit: counting.Limit{Algorithm: alg, Period: time.Minute, Requests: 60, Burst: 10}})
			// Two requests at once (one would be quiet): sent and leased.
			for range 2 {
				c.Admit(9, 1, n.clock.UnixNano())
			}
			n.f.Flush(context.Background())
			n.step(20 * time.Second) // Redis's bucket refills
			// Five requests 1 ms apart: the lease is under half its grant
			// and asked again with the rest of it held.
			for range 5 {
				n.step(time.Millisecond)
				c.Admit(9, 1, n.clock.UnixNano())
			}
			n.f.Flush(context.Background())
			admitted := 0
			for range 30 {
				if !c.Admit(9, 1, n.clock.UnixNano()).Exceeded {
					admitted++
				}
			}
			if admitted > 11 {
				t.Errorf("a burst after a refill admitted %d against a burst of 10", admitted)
			}
		})
	}
}

// TestShardStride: as counting's test of its own shards, no shard of this
// package's tables is a multiple of two cache lines long, which would put
// every shard's lock in half of L1's sets or fewer.
func TestShardStride(t *testing.T) {
	for name, size := range map[string]uintptr{
		"Counter":  unsafe.Sizeof(counting.Shard[int64, keyState, ledgers]{}),
		"Distinct": unsafe.Sizeof(counting.Shard[dfkey, int32, dfext]{}),
	} {
		if size%128 == 0 {
			t.Errorf("%s's shard is %d bytes, a multiple of 128: change counting.Shard's pad", name, size)
		}
	}
}

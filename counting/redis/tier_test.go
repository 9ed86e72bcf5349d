package redis

import (
	"context"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/guardd/guardd/counting"
	"github.com/guardd/guardd/testwait"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

var t0 = time.Unix(1_800_000_000, 0)

func newTestFleet(t *testing.T, node string, st Store, clock *time.Time) (*Fleet, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	f, err := New(Config{Node: node, Now: func() time.Time { return *clock }}, st, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f, reg
}

// testNode is a lone node on an in-process store, for tests that move its
// clock and Redis's TIME together and count the scripts it sent.
type testNode struct {
	clock time.Time
	st    *fakeStore
	f     *Fleet
}

func newTestNode(t *testing.T, start time.Time) *testNode {
	t.Helper()
	n := &testNode{clock: start, st: newFakeStore(start)}
	n.f, _ = newTestFleet(t, "a", n.st, &n.clock)
	return n
}

// counter returns the node's counter of rule r.
func (n *testNode) counter(t *testing.T, r Rule) *Counter {
	t.Helper()
	c, err := n.f.Counter(r)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// step moves the clocks by d.
func (n *testNode) step(d time.Duration) {
	n.clock = n.clock.Add(d)
	n.st.setNow(n.clock)
}

// sendsAfter moves the clocks by d, into key 7's next window or refill,
// and checks that a request there is admitted and that the next flush
// sends the key: more scripts in all than sent.
func (n *testNode) sendsAfter(t *testing.T, c *Counter, d time.Duration, sent float64) {
	t.Helper()
	n.step(d)
	if c.Add(7, 1, n.clock.UnixNano()).Exceeded {
		t.Fatal("refused once the key had headroom again")
	}
	n.f.Flush(context.Background())
	if got := n.scripts() - sent; got < 1 {
		t.Error("nothing sent once the key had headroom again")
	}
}

// scripts returns how many scripts the node has sent.
func (n *testNode) scripts() float64 { return testutil.ToFloat64(n.f.met.keys) }

// TestFleetSharesOneBudget: three nodes, one store, one key. Together they
// admit the limit, give or take what the leases allow, and each sees the
// fleet-wide count after a flush.
func TestFleetSharesOneBudget(t *testing.T) {
	for _, alg := range []counting.Algorithm{counting.SlidingWindow, counting.FixedWindow, counting.SlidingLog, counting.TokenBucket, counting.GCRA} {
		t.Run(alg.String(), func(t *testing.T) {
			clock := t0
			st := newFakeStore(clock)
			rule := Rule{Name: "r", Limit: counting.Limit{Algorithm: alg, Period: time.Minute, Requests: 100}}
			var cs []*Counter
			var fs []*Fleet
			for _, n := range []string{"a", "b", "c"} {
				f, _ := newTestFleet(t, n, st, &clock)
				c, err := f.Counter(rule)
				if err != nil {
					t.Fatal(err)
				}
				fs, cs = append(fs, f), append(cs, c)
			}
			for _, f := range fs { // learn there are three nodes
				f.Flush(context.Background())
			}
			admitted := 0
			for i := range 300 {
				now := clock.Add(time.Duration(i) * time.Millisecond).UnixNano()
				if !cs[i%3].Add(42, 1, now).Exceeded {
					admitted++
				}
				// Each node flushes when its lease is used up (Run would be
				// kicked); here every 5 events.
				if i%5 == 4 {
					for _, f := range fs {
						f.Flush(context.Background())
					}
				}
			}
			if admitted < 95 || admitted > 105 {
				t.Errorf("admitted %d of 300 against a limit of 100 (want within 5%%)", admitted)
			}
			for _, f := range fs {
				f.Flush(context.Background())
			}
			r := cs[0].Add(42, 0, clock.Add(300*time.Millisecond).UnixNano())
			if r.Count < 95 {
				t.Errorf("node a sees count %v, want the fleet-wide ~100+", r.Count)
			}
		})
	}
}

// TestFailureModes: with the store failing, the breaker opens after the
// threshold and each rule answers as configured; on recovery it closes.
func TestFailureModes(t *testing.T) {
	clock := t0
	st := newFakeStore(clock)
	f, reg := newTestFleet(t, "a", st, &clock)
	mk := func(name string, m OnError) *Counter {
		c, err := f.Counter(Rule{Name: name, Limit: counting.Limit{Period: time.Minute, Requests: 10}, OnError: m})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	open, closed, local := mk("open", Open), mk("closed", Closed), mk("local", Local)
	st.Heartbeat(context.Background(), "b", time.Second) // a second live node: local share is 5
	f.Flush(context.Background())
	if got := f.Status().LiveNodes; got != 2 {
		t.Fatalf("live nodes %d, want 2", got)
	}
	st.setFail(errFake)
	for i := range DefaultThreshold {
		clock = clock.Add(f.cfg.FlushInterval)
		open.Add(1, 1, clock.UnixNano()) // something to flush
		f.Flush(context.Background())
		if i < DefaultThreshold-1 && !f.Healthy() {
			t.Fatalf("breaker opened after %d failures", i+1)
		}
	}
	if f.Healthy() {
		t.Fatal("breaker still closed after the threshold")
	}
	now := clock.UnixNano()
	if r := open.Add(7, 1, now); r.Exceeded {
		t.Error("open rule refused while Redis is down")
	}
	if r := closed.Add(7, 1, now); !r.Exceeded {
		t.Error("closed rule allowed while Redis is down")
	}
	admitted := 0
	for range 10 {
		if !local.Add(7, 1, now).Exceeded {
			admitted++
		}
	}
	if admitted != 5 {
		t.Errorf("local rule admitted %d of 10 with two nodes and a limit of 10, want its share 5", admitted)
	}
	if v := testutil.ToFloat64(f.met.breaker.WithLabelValues("open")); v != 1 {
		t.Errorf("breaker open gauge %v", v)
	}
	// Recovery: after the cool-down a heartbeat probes and the pending
	// deltas of the open window are flushed.
	st.setFail(nil)
	clock = clock.Add(DefaultCooldown)
	f.Flush(context.Background())
	if !f.Healthy() {
		t.Fatal("breaker did not close after a good probe")
	}
	st.mu.Lock()
	got := st.state["guardd:{local:7}"].Cur
	st.mu.Unlock()
	if got != 10 { // the window algorithms count refused events too
		t.Errorf("after recovery Redis holds %v for the local rule's key, want all 10 counted", got)
	}
	_ = reg
}

// TestStaleDeltasDropped: a delta whose fixed window closed while Redis was
// away is dropped, not sent into the next window.
func TestStaleDeltasDropped(t *testing.T) {
	clock := t0
	st := newFakeStore(clock)
	f, _ := newTestFleet(t, "a", st, &clock)
	c, _ := f.Counter(Rule{Name: "fw", Limit: counting.Limit{Algorithm: counting.FixedWindow, Period: time.Second, Requests: 10}})
	st.setFail(errFake)
	for range 3 {
		c.Add(1, 1, clock.UnixNano())
		f.Flush(context.Background())
	}
	st.setFail(nil)
	clock = clock.Add(2 * time.Second)
	st.setNow(clock)
	f.Flush(context.Background())
	if v := testutil.ToFloat64(f.met.dropped); v < 1 {
		t.Errorf("dropped %v events, want the closed window's", v)
	}
	st.mu.Lock()
	got := st.state["guardd:{fw:1}"]
	st.mu.Unlock()
	if got.Cur != got.Grant { // the grant the recovered flush asked for, nothing else
		t.Errorf("Redis holds %+v: a closed window's count reached it", got)
	}
}

func TestBreaker(t *testing.T) {
	var seen []BreakerState
	b := NewBreaker(2, time.Second, func(s BreakerState) { seen = append(seen, s) })
	now := t0
	b.Failure(now)
	if b.State() != BreakerClosed {
		t.Fatal("opened after one failure")
	}
	b.Failure(now)
	if ok, _ := b.Allow(now.Add(time.Millisecond)); ok || b.State() != BreakerOpen {
		t.Fatal("not open after two failures")
	}
	ok, probe := b.Allow(now.Add(time.Second))
	if !ok || !probe {
		t.Fatal("no probe after the cool-down")
	}
	if ok, _ := b.Allow(now.Add(time.Second)); ok {
		t.Fatal("a second call while half-open")
	}
	b.Failure(now.Add(time.Second))
	if b.State() != BreakerOpen {
		t.Fatal("a failed probe did not reopen")
	}
	b.Allow(now.Add(2 * time.Second))
	b.Success()
	want := []BreakerState{BreakerOpen, BreakerHalfOpen, BreakerOpen, BreakerHalfOpen, BreakerClosed}
	if len(seen) != len(want) {
		t.Fatalf("transitions %v, want %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("transitions %v, want %v", seen, want)
		}
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want OnError
		err  bool
	}{{"", Local, false}, {"open", Open, false}, {"closed", Closed, false}, {"local", Local, false}, {"shut", 0, true}} {
		got, err := ParseOnError(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseOnError(%q) = %v, %v", tc.in, got, err)
		}
	}
	if _, err := ParseMode("ring"); err == nil {
		t.Error("ParseMode accepted ring")
	}
	if _, err := NewConn(Options{Addresses: []string{"127.0.0.1:1"}, Mode: Sentinel}); err == nil {
		t.Error("sentinel without master_name accepted")
	}
}

// TestDetection: a detector's counter counts every event, never refuses
// for want of a lease, and sees the other nodes' events after a flush.
func TestDetection(t *testing.T) {
	clock := t0
	st := newFakeStore(clock)
	fa, _ := newTestFleet(t, "a", st, &clock)
	fb, _ := newTestFleet(t, "b", st, &clock)
	rule := Rule{Name: "det", Limit: counting.Limit{Period: time.Minute, Requests: 5}, Detection: true}
	a, _ := fa.Counter(rule)
	b, _ := fb.Counter(rule)
	now := clock.UnixNano()
	for range 3 {
		if a.Add(1, 1, now).Exceeded {
			t.Fatal("node a over after at most 3 of 5")
		}
	}
	fa.Flush(context.Background())
	b.Add(1, 1, now) // b learns of the key's fleet count at its next flush
	fb.Flush(context.Background())
	b.Add(1, 1, now)
	if r := b.Add(1, 1, now); !r.Exceeded {
		t.Errorf("node b: 6th event fleet-wide not over the limit of 5: %+v", r)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if g := st.state["guardd:{det:1}"].Grant; g != 0 {
		t.Errorf("a detector was granted a lease: %v", g)
	}
}

// TestCounterReuseAndRelease: asking again for the same rule (a reload that
// keeps it) returns the counter in use, with its counts; a counter nobody
// references (its rule was removed or changed) leaves the flush loop, so
// reloads do not pile counters up.
func TestCounterReuseAndRelease(t *testing.T) {
	clock := t0
	f, _ := newTestFleet(t, "a", newFakeStore(clock), &clock)
	rule := Rule{Name: "keep", Limit: counting.Limit{Algorithm: counting.SlidingWindow, Period: time.Minute, Requests: 10}}
	keep, err := f.Counter(rule)
	if err != nil {
		t.Fatal(err)
	}
	keep.Add(1, 3, clock.UnixNano())
	for reload := range 50 {
		again, err := f.Counter(rule)
		if err != nil {
			t.Fatal(err)
		}
		if again != keep {
			t.Fatalf("reload %d: a new counter for an unchanged rule", reload)
		}
		// A rule that exists for one reload only, then is gone.
		gone, err := f.Counter(Rule{Name: "gone", Limit: counting.Limit{Algorithm: counting.GCRA, Period: time.Minute, Requests: 10 + float64(reload)}})
		if err != nil {
			t.Fatal(err)
		}
		gone.Add(2, 1, clock.UnixNano())
		f.Flush(context.Background())
	}
	if r := keep.Add(1, 0, clock.UnixNano()); r.Count != 3 {
		t.Errorf("kept counter's count = %v, want 3", r.Count)
	}
	// The dropped counters are freed by the garbage collector, then
	// forgotten: poll with a deadline.
	if !testwait.For(10*time.Second, func() bool { runtime.GC(); return f.Counters() == 1 }) {
		t.Fatalf("%d counters in the flush loop after 50 reloads, want 1", f.Counters())
	}
	f.Flush(context.Background())
	runtime.KeepAlive(keep)
}

// TestAddAllocs: a decision allocates nothing once its key is known, the
// flush loop's list of keys to look at included (it reuses its array).
func TestAddAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	clock := t0
	f, _ := newTestFleet(t, "a", newFakeStore(clock), &clock)
	c, err := f.Counter(Rule{Name: "r", Limit: counting.Limit{Algorithm: counting.GCRA, Period: time.Minute, Requests: 1e9}})
	if err != nil {
		t.Fatal(err)
	}
	now := clock.UnixNano()
	const keys = 1024
	for k := range uint64(keys) {
		c.Add(k*0x9e3779b97f4a7c15, 1, now)
	}
	f.Flush(context.Background())
	f.Flush(context.Background())
	i := uint64(0)
	if n := testing.AllocsPerRun(10*keys, func() {
		c.Add(i%keys*0x9e3779b97f4a7c15, 1, now)
		i++
		if i%keys == 0 {
			f.Flush(context.Background())
		}
	}); n > 0.01 {
		t.Errorf("Add: %v allocations per call", n)
	}
}

// TestFlushLooksAtUsedKeys: a flush sends for keys used since the last
// one, hands back the lease of a key idle since then, and a quiet key with
// a lease is still looked at by the periodic full pass (its window rolled:
// the lease goes back).
func TestFlushLooksAtUsedKeys(t *testing.T) {
	clock := t0
	st := newFakeStore(clock)
	f, reg := newTestFleet(t, "a", st, &clock)
	c, err := f.Counter(Rule{Name: "r", Limit: counting.Limit{Algorithm: counting.FixedWindow, Period: time.Second, Requests: 100}})
	if err != nil {
		t.Fatal(err)
	}
	keys := func() float64 { return testutil.ToFloat64(f.met.keys) }
	_ = reg
	for k := range uint64(100) {
		c.Add(k, 1, clock.UnixNano())
	}
	f.Flush(context.Background())
	if got := keys(); got != 100 {
		t.Fatalf("first flush: %v keys sent, want 100", got)
	}
	// Nothing used: nothing sent, whatever the number of flushes.
	for range 3 * fullEvery {
		f.Flush(context.Background())
	}
	if got := keys(); got != 100 {
		t.Fatalf("idle flushes sent %v keys, want none", got-100)
	}
	// The window rolls; the full pass hands every lease back.
	clock = clock.Add(1500 * time.Millisecond)
	before := keys()
	f.Flush(context.Background()) // a full pass: a second since the last
	if got := keys() - before; got != 100 {
		t.Fatalf("full pass sent %v keys, want 100 (leases of the old window handed back)", got)
	}
}

// TestSpentKeyAloneAsksNothing: a node alone in the fleet whose key has
// spent its budget sends nothing for it while refusing (no other node can
// hand budget back), nor lists it for a flush to look at, and asks again
// once its view shows headroom.
func TestSpentKeyAloneAsksNothing(t *testing.T) {
	n := newTestNode(t, t0)
	c := n.counter(t, Rule{Name: "r", Limit: counting.Limit{Algorithm: counting.FixedWindow, Period: 5 * time.Second, Requests: 5}})
	n.f.Flush(context.Background())
	admitted := 0
	for range 20 {
		n.step(time.Millisecond)
		if !c.Add(7, 1, n.clock.UnixNano()).Exceeded {
			admitted++
		}
		n.f.Flush(context.Background())
	}
	if admitted != 5 {
		t.Fatalf("admitted %d, want the limit, 5", admitted)
	}
	sent := n.scripts()
	for range 20 {
		n.step(time.Millisecond)
		if !c.Add(7, 1, n.clock.UnixNano()).Exceeded {
			t.Fatal("admitted beyond the budget")
		}
		// Not even listed for the flush to look at.
		sh := c.keys.For(7)
		sh.Lock()
		listed := len(sh.Ext.dirty)
		sh.Unlock()
		if listed != 0 {
			t.Fatalf("a refused spent key is listed for the next flush (%d keys listed)", listed)
		}
		n.f.Flush(context.Background())
	}
	if got := n.scripts() - sent; got != 0 {
		t.Errorf("%v scripts for a spent key with no other node", got)
	}
	n.sendsAfter(t, c, 5*time.Second, sent) // the next window
}

// TestSlowClientAsksOncePerLease: in a fleet of two, a client whose
// requests come seconds apart asks for a new lease when the one it holds
// cannot cover another request, not when half of it is spent; one that
// speeds up asks at half spent again, in time for its burst.
func TestSlowClientAsksOncePerLease(t *testing.T) {
	n := newTestNode(t, t0)
	other, _ := newTestFleet(t, "b", n.st, &n.clock)
	c := n.counter(t, Rule{Name: "r", Limit: counting.Limit{Algorithm: counting.GCRA, Period: time.Minute, Requests: 600, Burst: 10}})
	step := func(d time.Duration) {
		n.step(d)
		other.Flush(context.Background()) // its heartbeat: it stays live
	}
	other.Flush(context.Background())
	n.f.Flush(context.Background())
	if live := n.f.Status().LiveNodes; live != 2 {
		t.Fatalf("%d live nodes, want 2", live)
	}
	// The first request has no lease yet: it is sent, and granted what it
	// asks for (the key's pace is unknown before its first script); a
	// second request a second later spends that and is granted the node's
	// share of the bucket.
	c.Add(7, 1, n.clock.UnixNano())
	n.f.Flush(context.Background())
	lease := func() float64 {
		sh := c.keys.For(7)
		sh.Lock()
		defer sh.Unlock()
		return sh.Side(sh.Lookup(7)).lease
	}
	if first := lease(); first < 1 || first > 2 {
		t.Fatalf("lease %v after the key's first grant, want what it asked for (2)", first)
	}
	for range 2 {
		step(time.Second)
		if c.Add(7, 1, n.clock.UnixNano()).Exceeded {
			t.Fatal("slow request refused")
		}
		n.f.Flush(context.Background())
	}
	held := lease()
	if held < 4 {
		t.Fatalf("lease %v after the second grant, want about half the burst of 10", held)
	}
	// Slow: a request a second (the refill rate of 600/min is 10/s, so
	// the bucket in Redis is full at each one). One script once the lease
	// is spent, none before.
	sent := n.scripts()
	for i := range int(held) {
		step(time.Second)
		if c.Add(7, 1, n.clock.UnixNano()).Exceeded {
			t.Fatalf("slow request %d refused", i)
		}
		n.f.Flush(context.Background())
		if got := n.scripts() - sent; i < int(held)-1 && got != 0 {
			t.Fatalf("slow request %d of a lease of %v: %v scripts, want none until the lease is spent", i, held, got)
		}
	}
	if got := n.scripts() - sent; got != 1 {
		t.Fatalf("%v scripts for a spent lease, want 1", got)
	}
	// Fast: ten requests 5 ms apart. The key asks once half its lease is
	// spent, and no request waits for a grant.
	held, sent = lease(), n.scripts()
	if held < 4 {
		t.Fatalf("lease %v after the top-up, want about half the burst of 10", held)
	}
	step(time.Second)
	for i := range 10 {
		step(5 * time.Millisecond)
		if c.Add(7, 1, n.clock.UnixNano()).Exceeded {
			t.Fatalf("fast request %d refused", i)
		}
		if i%2 == 1 {
			n.f.Flush(context.Background())
		}
	}
	if got := n.scripts() - sent; got < 1 {
		t.Fatal("a client that sped up did not ask for more at half its lease")
	}
}

// TestHeldBudgetAloneAsksNothing: a node alone in the fleet that holds the
// rest of a key's budget as its lease (Redis has nothing more to grant)
// spends it without a script, even once less than half of it is left, and
// asks again when the window rolls.
func TestHeldBudgetAloneAsksNothing(t *testing.T) {
	n := newTestNode(t, t0)
	c := n.counter(t, Rule{Name: "r", Limit: counting.Limit{Algorithm: counting.SlidingWindow, Period: 5 * time.Second, Requests: 100}})
	n.f.Flush(context.Background())
	c.Add(7, 1, n.clock.UnixNano())
	n.f.Flush(context.Background()) // the grant: the rest of the budget
	sent := n.scripts()
	for i := range 99 {
		n.step(time.Millisecond)
		if c.Add(7, 1, n.clock.UnixNano()).Exceeded {
			t.Fatalf("request %d of the limit of 100 refused", i+2)
		}
		n.f.Flush(context.Background())
	}
	if got := n.scripts() - sent; got != 0 {
		t.Errorf("%v scripts while spending the whole budget held as a lease, want none", got)
	}
	if !c.Add(7, 1, n.clock.UnixNano()).Exceeded {
		t.Fatal("admitted beyond the limit")
	}
	n.sendsAfter(t, c, 5*time.Second, sent) // the window rolls
}

// TestRolledLeaseNotCountedAgainstItsNode: when a window rolls, the lease
// a node was granted in it and did not use is handed back with the next
// flush; until then the previous window's count in the node's view holds
// it, and the node must not refuse its own clients for it.
func TestRolledLeaseNotCountedAgainstItsNode(t *testing.T) {
	for _, alg := range []counting.Algorithm{counting.SlidingWindow, counting.FixedWindow} {
		t.Run(alg.String(), func(t *testing.T) {
			n := newTestNode(t, t0.Truncate(5*time.Second))
			c := n.counter(t, Rule{Name: "r", Limit: counting.Limit{Algorithm: alg, Period: 5 * time.Second, Requests: 100}})
			n.f.Flush(context.Background())
			c.Add(7, 1, n.clock.UnixNano())
			n.f.Flush(context.Background()) // the grant: the rest of the window's budget
			for range 9 {
				n.step(time.Millisecond)
				c.Add(7, 1, n.clock.UnixNano())
			}
			n.step(5 * time.Second) // the next window, early in it; no flush yet
			if r := c.Add(7, 1, n.clock.UnixNano()); r.Exceeded {
				t.Fatalf("refused just after the window rolled, with 10 of 100 used in the last one: %+v", r)
			}
		})
	}
}

// TestSlowClientAloneSendsNothing: on a node alone in the fleet, a
// shaper's client under its rate costs no script at all, its quiet events
// forgotten once the bucket has refilled them; a client that bursts is sent
// and leased as before, and is held to the burst.
func TestSlowClientAloneSendsNothing(t *testing.T) {
	for _, alg := range []counting.Algorithm{counting.GCRA, counting.TokenBucket} {
		t.Run(alg.String(), func(t *testing.T) {
			n := newTestNode(t, t0)
			c := n.counter(t, Rule{Name: "r", Limit: counting.Limit{Algorithm: alg, Period: time.Minute, Requests: 600, Burst: 10}})
			n.f.Flush(context.Background())
			// Slow: a request a second against a refill of ten a second.
			for i := range 30 {
				if c.Add(7, 1, n.clock.UnixNano()).Exceeded {
					t.Fatalf("slow request %d refused", i)
				}
				n.f.Flush(context.Background())
				n.step(time.Second)
			}
			if got := n.scripts(); got != 0 {
				t.Fatalf("%v scripts for a slow client of a lone node, want none", got)
			}
			sh := c.keys.For(7)
			sh.Lock()
			extra := sh.Side(sh.Lookup(7)).extra
			sh.Unlock()
			if extra != 1 {
				t.Fatalf("%v quiet events held after a request a second, want the last one alone (the others refilled and forgotten)", extra)
			}
			// A burst of 15, 1 ms apart, flushed as kicks would: held to
			// the burst of 10 (and the allowance of one), sent at once.
			admitted := 0
			for range 15 {
				if !c.Add(8, 1, n.clock.UnixNano()).Exceeded {
					admitted++
				}
				n.f.Flush(context.Background())
				n.step(time.Millisecond)
			}
			if admitted < 10 || admitted > 11 {
				t.Errorf("a burst of 15 against a bucket of 10: %d admitted, want 10 (11 with the allowance)", admitted)
			}
			if n.scripts() < 1 {
				t.Error("a burst was not sent")
			}
			// Idle for two periods: the slow client's key, quiet events
			// and all, is forgotten.
			n.step(2*time.Minute + time.Second)
			n.f.Flush(context.Background())
			sh.Lock()
			i := sh.Lookup(7)
			sh.Unlock()
			if i >= 0 {
				t.Error("a key idle for two periods with a quiet event was not forgotten")
			}
		})
	}
}

// TestQuietEventsSentWhenANodeJoins: a lone node's quiet events are sent
// as soon as it learns of a second node, which must see them.
func TestQuietEventsSentWhenANodeJoins(t *testing.T) {
	n := newTestNode(t, t0)
	// Six a minute, a bucket of ten: an event takes ten seconds to refill.
	c := n.counter(t, Rule{Name: "r", Limit: counting.Limit{Algorithm: counting.GCRA, Period: time.Minute, Requests: 6, Burst: 10}})
	n.f.Flush(context.Background())
	if c.Add(7, 1, n.clock.UnixNano()).Exceeded {
		t.Fatal("first request refused")
	}
	n.f.Flush(context.Background())
	if got := n.scripts(); got != 0 {
		t.Fatalf("%v scripts for one request on a lone node, want none", got)
	}
	other, _ := newTestFleet(t, "b", n.st, &n.clock)
	other.Flush(context.Background())
	n.step(time.Second) // a's next heartbeat and full pass
	n.f.Flush(context.Background())
	if live := n.f.Status().LiveNodes; live != 2 {
		t.Fatalf("%d live nodes, want 2", live)
	}
	if got := n.scripts(); got != 1 {
		t.Fatalf("%v scripts once a node joined, want the quiet event sent", got)
	}
	if u := c.p.usage(n.st.state[c.redisKey(7)], n.clock.UnixMicro()); u < 0.8 {
		t.Errorf("Redis usage %v after the join, want the quiet event (0.9 of it left)", u)
	}
}

// TestLoneNodeAdmitsAsATable: a lone node admits what counting.Table
// admits for one key's mixed traffic (slow spells, bursts, a client just
// over its rate), within the allowance, and no more.
func TestLoneNodeAdmitsAsATable(t *testing.T) {
	for _, alg := range []counting.Algorithm{counting.GCRA, counting.TokenBucket} {
		t.Run(alg.String(), func(t *testing.T) {
			n := newTestNode(t, t0)
			l := counting.Limit{Algorithm: alg, Period: time.Minute, Requests: 600, Burst: 10}
			c := n.counter(t, Rule{Name: "r", Limit: l})
			tab, err := counting.NewTable(counting.Config{Limit: l})
			if err != nil {
				t.Fatal(err)
			}
			n.f.Flush(context.Background())
			rng := rand.New(rand.NewPCG(1, 2))
			var fleet, table int
			lastFlush := n.clock
			for i := range 5000 {
				// Gaps: mostly 50-150 ms (about the refill of one every
				// 100 ms), a burst now and then, a slow spell now and then.
				gap := time.Duration(50+rng.IntN(100)) * time.Millisecond
				switch i % 400 {
				case 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111:
					gap = time.Millisecond
				case 300:
					gap = 3 * time.Second
				}
				n.step(gap)
				now := n.clock.UnixNano()
				if !c.Admit(7, 1, now).Exceeded {
					fleet++
				}
				if !tab.Admit(7, 1, now).Exceeded {
					table++
				}
				kicked := false
				select {
				case <-n.f.kick:
					kicked = true
				default:
				}
				if kicked || n.clock.Sub(lastFlush) >= DefaultFlushInterval {
					n.f.Flush(context.Background())
					lastFlush = n.clock
				}
			}
			if fleet > table+table/100 || fleet < table-table/20 {
				t.Errorf("lone node admitted %d, counting.Table %d: want within -5%%/+1%%", fleet, table)
			}
			t.Logf("lone node %d, table %d, scripts %v", fleet, table, n.scripts())
		})
	}
}

// TestDecisionLabels: every way of deciding has its own metric label, and
// a value outside the set reads "other", never an empty label.
func TestDecisionLabels(t *testing.T) {
	seen := map[string]bool{}
	for d := range numDecisions {
		l := d.String()
		if l == "other" || l == "" || seen[l] {
			t.Errorf("decision %d has label %q", d, l)
		}
		seen[l] = true
	}
	for _, tc := range []struct {
		d    decision
		want string
	}{{byFleet, "fleet"}, {byLeaseWait, "lease_wait"}, {byOpen, "open"}, {byClosed, "closed"}, {byLocal, "local"}, {numDecisions, "other"}, {255, "other"}} {
		if got := tc.d.String(); got != tc.want {
			t.Errorf("decision %d: %q, want %q", tc.d, got, tc.want)
		}
	}
	// The on_store_error decisions are labelled as the configuration names them.
	for m, d := range map[OnError]decision{Open: byOpen, Closed: byClosed, Local: byLocal} {
		if m.String() != d.String() {
			t.Errorf("on_store_error %s decides as %s", m, d)
		}
	}
}

// TestShareWholeEvents: a grant is a whole number of events, so that no
// node holds a fraction of one that none can spend (three nodes sharing
// 100 admitted 99 when 65 left were split 21.67 to one node).
func TestShareWholeEvents(t *testing.T) {
	for _, tc := range []struct {
		h, capacity, held, want float64
		nodes                   int
		grant                   float64
	}{
		{99, 100, 0, 2, 3, 33},
		{65, 100, 0, 2, 3, 21},
		{43, 100, 0, 2, 3, 2},            // below half: no more than asked
		{43, 100, 0, 2.9, 3, 2},          // asked for a fraction: whole events
		{2.9999999999, 100, 0, 10, 1, 3}, // float error: three events
		{0.67, 100, 0, 2, 3, 0},          // less than one event left: nothing
		{1.5, 100, 0, 2, 3, 1},
		{60, 100, 10, 100, 3, 13}, // (60+10)/3 - 10 = 13.3
		{1000, 100, 0, 0.5, 1, 1000},
	} {
		if got := share(tc.h, tc.capacity, tc.held, tc.want, tc.nodes); got != tc.grant {
			t.Errorf("share(h %v, capacity %v, held %v, want %v, nodes %d) = %v, want %v", tc.h, tc.capacity, tc.held, tc.want, tc.nodes, got, tc.grant)
		}
	}
}

// TestPaceFollowsDemand: once a key has a pace, a node is granted about
// what it would spend before the budget runs out at the fleet's rate: a
// node asking for 5% of the traffic gets about 5% of the headroom, not a
// third; a key far from running out gets its share; a lone node, or a
// key's first call, is not paced by rate.
func TestPaceFollowsDemand(t *testing.T) {
	p, err := newParams(Rule{Name: "p", Limit: counting.Limit{Period: time.Hour, Requests: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	const fl = 50_000 // µs
	now := int64(1_800_000_000_000_000)
	// 100 ms of a busy node's traffic at 1,350 events/s: 135 events.
	s, e := p.step(State{}, estimate{}, call{delta: 1, want: 2, nodes: 3, flush: fl}, now)
	if s.Grant != 2 {
		t.Fatalf("first call granted %v, want what it asked for, 2", s.Grant)
	}
	s, e = p.step(s, e, call{delta: 133, nodes: 3, flush: fl}, now+100_000)
	// A quiet node asks for twice its 3.75 events per flush interval.
	q, _ := p.step(s, e, call{delta: 1, want: 7.5, nodes: 3, flush: fl}, now+100_000)
	// rate 75/s; headroom 863 at 1,360/s: 0.63 s of it, 47 events.
	if q.Grant < 40 || q.Grant > 55 {
		t.Errorf("quiet node granted %v, want about 5%% of the 863 left (47)", q.Grant)
	}
	// The busy node asking at its rate gets its share (a third).
	b, _ := p.step(s, e, call{delta: 1, want: 135, nodes: 3, flush: fl}, now+100_000)
	if b.Grant != 287 {
		t.Errorf("busy node granted %v, want its share 287", b.Grant)
	}
	// Far from running out (the same events over an hour's first ten
	// minutes), the quiet node gets its share too.
	far, _ := p.step(s, e, call{delta: 1, want: 7.5, nodes: 3, flush: fl}, now+600_000_000)
	if far.Grant != 287 {
		t.Errorf("a key far from its limit granted %v, want the share 287", far.Grant)
	}
	// A lone node is never paced.
	lone, _ := p.step(s, e, call{delta: 1, want: 7.5, nodes: 1, flush: fl}, now+100_000)
	if lone.Grant != 863 {
		t.Errorf("lone node granted %v, want all 863 left", lone.Grant)
	}
}

// TestSlowClientBelowHalfNotRefused: with peers and a small limit, a node
// waits for its grant rather than admit beyond its lease while a key's
// requests stream in below half its capacity (exact admission), but a
// slow client's request, whose node handed its idle lease back, is
// admitted at once: for it a wait would be a refusal.
func TestSlowClientBelowHalfNotRefused(t *testing.T) {
	n := newTestNode(t, t0)
	other, _ := newTestFleet(t, "b", n.st, &n.clock)
	c := n.counter(t, Rule{Name: "r", Limit: counting.Limit{Algorithm: counting.SlidingWindow, Period: time.Hour, Requests: 100}})
	oc, err := other.Counter(c.Rule())
	if err != nil {
		t.Fatal(err)
	}
	flush := func() {
		n.f.Flush(context.Background())
		other.Flush(context.Background())
	}
	flush()
	n.step(time.Second)
	flush()
	if live := n.f.Status().LiveNodes; live != 2 {
		t.Fatalf("%d live nodes, want 2", live)
	}
	// The other node spends 60 of the 100.
	for range 60 {
		n.step(time.Millisecond)
		if oc.Add(7, 1, n.clock.UnixNano()).Exceeded {
			flush()
		}
	}
	flush()
	// A slow client on this node: a request every second, each after the
	// node has handed back its idle lease. None is refused.
	for i := range 10 {
		n.step(time.Second)
		if r := c.Add(7, 1, n.clock.UnixNano()); r.Exceeded {
			t.Fatalf("slow request %d refused (remaining %v) with %v of 100 used", i, r.Remaining, 60+i)
		}
		flush()
		n.step(2 * DefaultFlushInterval)
		flush()
	}
}

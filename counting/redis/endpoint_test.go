package redis

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/guardd/guardd/counting"
	"github.com/guardd/guardd/testwait"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestKeySlot(t *testing.T) {
	for _, tt := range []struct {
		key  string
		want uint16
	}{
		{"123456789", 0x31C3}, // the CRC16/XMODEM check value
		{"foo", 12182},        // the examples of the Redis Cluster specification
		{"bar", 5061},
		{"{user1000}.following", KeySlot("user1000")},
		{"{user1000}.followers", KeySlot("user1000")},
		{"foo{}{bar}", KeySlot("foo{}{bar}")},
		{"foo{{bar}}zap", KeySlot("{bar")},
		{"foo{bar}{zap}", KeySlot("bar")},
		{"guardd:{r:1f}", KeySlot("r:1f")},
		{"", 0},
	} {
		if got := KeySlot(tt.key); got != tt.want {
			t.Errorf("KeySlot(%q) = %d, want %d", tt.key, got, tt.want)
		}
		if got := KeySlot([]byte(tt.key)); got != tt.want {
			t.Errorf("KeySlot([]byte %q) = %d, want %d", tt.key, got, tt.want)
		}
	}
}

// fakeCluster is a fakeStore split over endpoints by slot ranges, like a
// three-master Cluster, each of which can fail or hang on its own.
type fakeCluster struct {
	*fakeStore
	mu    sync.Mutex
	names []string
	slots []uint16
	down  map[string]bool
	// waitFor[a] = b: an Apply to a hangs until b has been applied (or
	// its deadline), and then sets saw[a].
	waitFor map[string]string
	saw     map[string]bool
	served  map[string]int // ops applied per endpoint
	pings   int
}

func newFakeCluster(now time.Time, names ...string) *fakeCluster {
	fc := &fakeCluster{fakeStore: newFakeStore(now), down: map[string]bool{}, waitFor: map[string]string{},
		served: map[string]int{}, saw: map[string]bool{}}
	fc.setTopology(names...)
	return fc
}

func (fc *fakeCluster) setTopology(names ...string) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.names = names
	fc.slots = make([]uint16, Slots)
	for s := range fc.slots {
		fc.slots[s] = uint16(s * len(names) / Slots)
	}
}

func (fc *fakeCluster) endpointOf(key string) string {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.names[fc.slots[KeySlot(key)]]
}

func (fc *fakeCluster) Topology(context.Context) ([]string, []uint16, error) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return append([]string(nil), fc.names...), append([]uint16(nil), fc.slots...), nil
}

func (fc *fakeCluster) Ping(_ context.Context, name string) error {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.pings++
	if fc.down[name] {
		return errFake
	}
	return nil
}

func (fc *fakeCluster) Apply(ctx context.Context, ops []Op, states []State, errs []error) error {
	if len(ops) == 0 {
		return nil
	}
	ep := fc.endpointOf(ops[0].Key)
	for _, o := range ops[1:] {
		if fc.endpointOf(o.Key) != ep {
			return fmt.Errorf("one Apply spans endpoints %s and %s", ep, fc.endpointOf(o.Key))
		}
	}
	fc.mu.Lock()
	other, down := fc.waitFor[ep], fc.down[ep]
	fc.mu.Unlock()
	if other != "" {
		// Hang until other's ops are applied, or the deadline.
		for ctx.Err() == nil {
			fc.mu.Lock()
			served := fc.served[other] > 0
			if served {
				fc.saw[ep] = true
			}
			fc.mu.Unlock()
			if served {
				break
			}
			time.Sleep(time.Millisecond) // polling a condition, bounded by ctx
		}
		for i := range errs {
			errs[i] = errFake
		}
		return errFake
	}
	if down {
		for i := range errs {
			errs[i] = errFake
		}
		return errFake
	}
	fc.mu.Lock()
	fc.served[ep] += len(ops)
	fc.mu.Unlock()
	return fc.fakeStore.Apply(ctx, ops, states, errs)
}

func (fc *fakeCluster) set(f func()) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	f()
}

// keyOn returns a key of rule whose slot is served by endpoint ep.
func keyOn(t *testing.T, fc *fakeCluster, rule string, ep string) uint64 {
	t.Helper()
	return keyOnFrom(t, fc, rule, ep, 1)
}

func keyOnFrom(t *testing.T, fc *fakeCluster, rule string, ep string, from uint64) uint64 {
	t.Helper()
	for k := from; k < from+10000; k++ {
		if fc.endpointOf("guardd:{"+rule+":"+strconv.FormatUint(k, 16)+"}") == ep {
			return k
		}
	}
	t.Fatalf("no key of %s on %s", rule, ep)
	return 0
}

func waitEndpoints(t *testing.T, f *Fleet, n int) {
	t.Helper()
	// Each poll flushes: the background topology read is what is awaited.
	if !testwait.For(10*time.Second, func() bool {
		if len(f.Status().Endpoints) == n {
			return true
		}
		f.Flush(context.Background())
		return false
	}) {
		t.Fatalf("endpoints %+v, want %d", f.Status().Endpoints, n)
	}
}

func endpointState(f *Fleet, name string) string {
	for _, e := range f.Status().Endpoints {
		if e.Name == name {
			return e.Breaker
		}
	}
	return "absent"
}

// TestEndpointBreakers: one of three endpoints fails. Only its keys answer
// by their rule's on_store_error; the others keep fleet counting and keep
// being flushed; its breaker alone opens, and a half-open probe closes it.
func TestEndpointBreakers(t *testing.T) {
	clock := t0
	fc := newFakeCluster(clock, "m1", "m2", "m3")
	f, _ := newTestFleet(t, "a", fc, &clock)
	waitEndpoints(t, f, 3)
	mk := func(name string, m OnError) *Counter {
		c, err := f.Counter(Rule{Name: name, Limit: counting.Limit{Period: time.Minute, Requests: 10}, OnError: m})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	open, closed, local := mk("open", Open), mk("closed", Closed), mk("local", Local)
	fc.set(func() { fc.down["m2"] = true })
	openDead, openLive := keyOn(t, fc, "open", "m2"), keyOnFrom(t, fc, "open", "m1", 1<<20)
	for range DefaultThreshold {
		clock = clock.Add(f.cfg.FlushInterval)
		open.Add(openDead, 1, clock.UnixNano())
		open.Add(openLive, 1, clock.UnixNano())
		f.Flush(context.Background())
	}
	for ep, want := range map[string]string{"m1": "closed", "m2": "open", "m3": "closed"} {
		if got := endpointState(f, ep); got != want {
			t.Errorf("endpoint %s breaker %s, want %s", ep, got, want)
		}
	}
	if f.Healthy() || f.Status().Breaker != "open" {
		t.Errorf("Healthy %v, status breaker %s: want false, open", f.Healthy(), f.Status().Breaker)
	}
	if v := testutil.ToFloat64(f.met.endpoint.WithLabelValues("m2", "open")); v != 1 {
		t.Errorf("m2 open gauge %v", v)
	}
	if v := testutil.ToFloat64(f.met.breaker.WithLabelValues("open")); v != 1 {
		t.Errorf("worst-state open gauge %v", v)
	}
	fc.set(func() { clear(fc.served) })
	now := clock.UnixNano()
	// The dead endpoint's keys: each rule as configured.
	for i := range 20 {
		if open.Add(openDead, 1, now).Exceeded {
			t.Fatalf("open rule refused event %d of a key on the dead endpoint", i)
		}
	}
	if !closed.Add(keyOn(t, fc, "closed", "m2"), 1, now).Exceeded {
		t.Error("closed rule allowed a key on the dead endpoint")
	}
	admitted := 0
	for range 20 {
		if !local.Add(keyOn(t, fc, "local", "m2"), 1, now).Exceeded {
			admitted++
		}
	}
	if admitted != 10 {
		t.Errorf("local rule admitted %d of 20 on the dead endpoint, want its node's share 10", admitted)
	}
	// The live endpoints' keys: fleet counting, the limit enforced, the
	// deltas flushed to their endpoints.
	for _, ep := range []string{"m1", "m3"} {
		for name, c := range map[string]*Counter{"open": open, "closed": closed, "local": local} {
			k := keyOn(t, fc, name, ep)
			n := 0
			for range 30 {
				if !c.Add(k, 1, now).Exceeded {
					n++
				}
				clock = clock.Add(time.Millisecond)
				f.Flush(context.Background())
			}
			if n < 9 || n > 11 {
				t.Errorf("%s rule on live endpoint %s admitted %d of 30, want the limit 10 (fleet counting)", name, ep, n)
			}
		}
	}
	fc.set(func() {
		if fc.served["m1"] == 0 || fc.served["m3"] == 0 || fc.served["m2"] != 0 {
			t.Errorf("ops applied per endpoint %v: want m1 and m3, not m2", fc.served)
		}
	})
	if got := endpointState(f, "m2"); got != "open" {
		t.Errorf("m2 breaker %s during the outage", got)
	}
	// Recovery: after the cool-down the probe closes m2's breaker and its
	// pending deltas (the local rule's 20 events) reach it.
	fc.set(func() { fc.down["m2"] = false })
	clock = clock.Add(DefaultCooldown)
	f.Flush(context.Background())
	if !f.Healthy() || endpointState(f, "m2") != "closed" {
		t.Fatalf("after recovery: healthy %v, m2 %s", f.Healthy(), endpointState(f, "m2"))
	}
	key := "guardd:{local:" + strconv.FormatUint(keyOn(t, fc, "local", "m2"), 16) + "}"
	fc.fakeStore.mu.Lock()
	got := fc.state[key].Cur
	fc.fakeStore.mu.Unlock()
	if got != 20 {
		t.Errorf("after recovery m2 holds %v for the local rule's key, want the outage's 20", got)
	}
}

// TestEndpointProbeByPing: an endpoint with nothing to flush is probed by
// PING when its cool-down is over.
func TestEndpointProbeByPing(t *testing.T) {
	clock := t0
	fc := newFakeCluster(clock, "m1", "m2", "m3")
	f, _ := newTestFleet(t, "a", fc, &clock)
	waitEndpoints(t, f, 3)
	// An endpoint other than the heartbeat's (whose probe is the heartbeat).
	ep2 := "m1"
	if f.eps.top.Load().of(heartbeatSlot) == 0 {
		ep2 = "m2"
	}
	c, _ := f.Counter(Rule{Name: "p", Limit: counting.Limit{Period: time.Minute, Requests: 10}})
	k := keyOn(t, fc, "p", ep2)
	fc.set(func() { fc.down[ep2] = true })
	for range DefaultThreshold {
		clock = clock.Add(f.cfg.FlushInterval)
		c.Add(k, 1, clock.UnixNano())
		f.Flush(context.Background())
	}
	if endpointState(f, ep2) != "open" {
		t.Fatalf("%s %s, want open", ep2, endpointState(f, ep2))
	}
	// Its only key's delta goes back and is sent again on recovery; with
	// it sent, m3 has nothing to flush, and a later outage is probed by PING.
	fc.set(func() { fc.down[ep2] = false })
	clock = clock.Add(DefaultCooldown)
	f.Flush(context.Background())
	if endpointState(f, ep2) != "closed" {
		t.Fatalf("%s %s after recovery", ep2, endpointState(f, ep2))
	}
	clock = clock.Add(f.cfg.FlushInterval)
	f.Flush(context.Background()) // the key is quiet now: no op for ep2
	ep := f.eps.top.Load().eps[f.eps.top.Load().of(KeySlot("guardd:{p:"+strconv.FormatUint(k, 16)+"}"))]
	for range DefaultThreshold {
		ep.br.Failure(clock)
	}
	clock = clock.Add(DefaultCooldown)
	fc.set(func() { fc.pings = 0 })
	f.Flush(context.Background())
	fc.set(func() {
		if fc.pings != 1 {
			t.Errorf("%d pings, want the one probe", fc.pings)
		}
	})
	if endpointState(f, ep2) != "closed" {
		t.Errorf("%s %s after a good ping", ep2, endpointState(f, ep2))
	}
}

// TestEndpointHangDoesNotDelayOthers: one endpoint hangs until its
// deadline; the others' ops are applied while it hangs, not after.
func TestEndpointHangDoesNotDelayOthers(t *testing.T) {
	clock := t0
	fc := newFakeCluster(clock, "m1", "m2", "m3")
	reg := prometheus.NewRegistry()
	f, err := New(Config{Node: "a", Deadline: 5 * time.Second, Now: func() time.Time { return clock }}, fc, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitEndpoints(t, f, 3)
	c, _ := f.Counter(Rule{Name: "h", Limit: counting.Limit{Period: time.Minute, Requests: 10}})
	fc.set(func() { fc.waitFor["m1"] = "m3" })
	c.Add(keyOn(t, fc, "h", "m1"), 1, clock.UnixNano())
	c.Add(keyOn(t, fc, "h", "m3"), 1, clock.UnixNano())
	f.Flush(context.Background())
	fc.set(func() {
		if !fc.saw["m1"] {
			t.Error("m3's ops were not applied while m1 hung: one endpoint's flush waited for another's deadline")
		}
	})
}

// TestTopologySwap: a failover moves a master's slots to a new endpoint;
// the old one leaves the status and the metrics, the new starts closed,
// and endpoints that stay keep their breaker.
func TestTopologySwap(t *testing.T) {
	clock := t0
	fc := newFakeCluster(clock, "m1", "m2", "m3")
	f, _ := newTestFleet(t, "a", fc, &clock)
	waitEndpoints(t, f, 3)
	m1 := f.eps.top.Load().eps[0]
	for range DefaultThreshold {
		f.eps.top.Load().eps[1].br.Failure(clock)
	}
	if f.Healthy() {
		t.Fatal("healthy with m2 open")
	}
	f.eps.swap([]string{"m1", "r2", "m3"}, fc.slots)
	if !f.Healthy() || endpointState(f, "r2") != "closed" || endpointState(f, "m2") != "absent" {
		t.Errorf("after the swap: healthy %v, status %+v", f.Healthy(), f.Status().Endpoints)
	}
	if f.eps.top.Load().eps[0] != m1 {
		t.Error("m1 lost its breaker across the swap")
	}
	if n := testutil.CollectAndCount(f.met.endpoint); n != 3*int(numBreakerStates) {
		t.Errorf("%d endpoint gauge series, want %d (m2's dropped)", n, 3*int(numBreakerStates))
	}
	for _, e := range f.Status().Endpoints {
		if e.Slots < Slots/3-1 || e.Slots > Slots/3+1 {
			t.Errorf("endpoint %s serves %d slots", e.Name, e.Slots)
		}
	}
}

// TestHealthyKeyMatchesRedisKey: the endpoint Add judges a key by is the
// one its flushes go to, key 0 included.
func TestHealthyKeyMatchesRedisKey(t *testing.T) {
	clock := t0
	fc := newFakeCluster(clock, "m1", "m2", "m3")
	f, _ := newTestFleet(t, "a", fc, &clock)
	waitEndpoints(t, f, 3)
	c, _ := f.Counter(Rule{Name: "hk", Limit: counting.Limit{Period: time.Minute, Requests: 10}})
	top := f.eps.top.Load()
	for range DefaultThreshold {
		top.eps[1].br.Failure(clock)
	}
	for _, k := range []uint64{0, 1, 2, 0xffffffffffffffff, counting.ZeroKey, 12345} {
		stored := k
		if stored == 0 {
			stored = counting.ZeroKey
		}
		want := top.of(KeySlot(c.redisKey(stored))) != 1
		if got := f.eps.healthyKey(c, k); got != want {
			t.Errorf("key %x: healthyKey %v, want %v (its Redis key's endpoint)", k, got, want)
		}
	}
}

// TestDegradedAddAllocs: with one endpoint's breaker open, Add hashes each
// key to find its endpoint, without allocating.
func TestDegradedAddAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	clock := t0
	fc := newFakeCluster(clock, "m1", "m2", "m3")
	f, _ := newTestFleet(t, "a", fc, &clock)
	waitEndpoints(t, f, 3)
	c, _ := f.Counter(Rule{Name: "a_rule_name_of_some_length", Limit: counting.Limit{Period: time.Minute, Requests: 1e9}})
	for range DefaultThreshold {
		f.eps.top.Load().eps[1].br.Failure(clock)
	}
	now := clock.UnixNano()
	for i := range uint64(64) {
		c.Add(i*0x9e3779b97f4a7c15, 1, now)
	}
	i := uint64(0)
	if n := testing.AllocsPerRun(1000, func() {
		c.Add(i%64*0x9e3779b97f4a7c15, 1, now)
		i++
	}); n > 0.01 {
		t.Errorf("degraded Add: %v allocations per call", n)
	}
}

func BenchmarkDegradedHealthyKey(b *testing.B) {
	clock := t0
	fc := newFakeCluster(clock, "m1", "m2", "m3")
	f, err := New(Config{Node: "a", Now: func() time.Time { return clock }}, fc, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	names, slots, _ := fc.Topology(context.Background())
	f.eps.swap(names, slots)
	c, _ := f.Counter(Rule{Name: "a_rule_name_of_some_length", Limit: counting.Limit{Period: time.Minute, Requests: 1e9}})
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		f.eps.healthyKey(c, uint64(i)*0x9e3779b97f4a7c15)
	}
}

package fleet

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/guardd/guardd/counting/redis"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/testwait"
)

// fakeConn is an in-process stream and active set, for unit tests only.
type fakeConn struct {
	mu     sync.Mutex
	cond   *sync.Cond
	stream []redis.Change
	active map[string][]byte
	down   bool
}

func newFakeConn() *fakeConn {
	c := &fakeConn{active: map[string][]byte{}}
	c.cond = sync.NewCond(&c.mu)
	return c
}

var errDown = fmt.Errorf("fake: down")

func (c *fakeConn) Publish(_ context.Context, f string, p []byte, _ time.Time, del bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		return errDown
	}
	if del {
		delete(c.active, f)
	} else {
		c.active[f] = p
	}
	c.stream = append(c.stream, redis.Change{ID: fmt.Sprintf("%d-0", len(c.stream)+1), Del: del, Field: f, Payload: p})
	c.cond.Broadcast()
	return nil
}

func (c *fakeConn) Active(context.Context) (string, map[string][]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		return "", nil, errDown
	}
	set := map[string][]byte{}
	for k, v := range c.active {
		set[k] = v
	}
	return fmt.Sprintf("%d-0", len(c.stream)), set, nil
}

func (c *fakeConn) Read(ctx context.Context, after string, block time.Duration, count int) ([]redis.Change, error) {
	var n int
	fmt.Sscanf(after, "%d-0", &n)
	c.mu.Lock()
	defer c.mu.Unlock()
	stop := time.AfterFunc(block, func() { c.mu.Lock(); c.cond.Broadcast(); c.mu.Unlock() })
	defer stop.Stop()
	deadline := time.Now().Add(block)
	for len(c.stream) <= n && !c.down && ctx.Err() == nil && time.Now().Before(deadline) {
		c.cond.Wait()
	}
	if c.down {
		return nil, errDown
	}
	if len(c.stream) <= n {
		return nil, nil
	}
	return append([]redis.Change(nil), c.stream[n:min(len(c.stream), n+count)]...), nil
}

type testNode struct {
	store *mitigation.Store
	sync  *Sync
	stop  func()
}

func startNode(t *testing.T, name string, conn Conn) *testNode {
	t.Helper()
	st, err := mitigation.New(mitigation.Config{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Node: name}, st, conn, prometheus.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	n := &testNode{store: st, sync: s, stop: func() { cancel(); <-done }}
	t.Cleanup(n.stop)
	return n
}

func scope(ip string) mitigation.Scope { return mitigation.Scope{{Name: "ip.src", Value: ip}} }

func has(st *mitigation.Store, sc mitigation.Scope, rule string) (mitigation.Mitigation, bool) {
	for _, m := range st.List(time.Now()) {
		if m.Scope.Equal(sc) && m.Rule == rule {
			return m, true
		}
	}
	return mitigation.Mitigation{}, false
}

// TestPropagation and TestOutageQueuesChanges run in synctest bubbles: the
// connection is an in-process fake, so the sync loops' blocking reads and
// retry timers run on the bubble's clock, and a wait for a retry costs no
// wall-clock time (TestOutageQueuesChanges took 1.1 s of it before).
func TestPropagation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		conn := newFakeConn()
		a, b := startNode(t, "a", conn), startNode(t, "b", conn)
		testwait.Until(t, 10*time.Second, "both loaded", func() bool { return a.sync.Status().Loaded && b.sync.Status().Loaded })
		now := time.Now()
		m, _, err := a.store.Add(mitigation.Mitigation{Rule: "r", Action: mitigation.ActionBlock, Scope: scope("192.0.2.1"), Expires: now.Add(time.Hour)}, now)
		if err != nil {
			t.Fatal(err)
		}
		testwait.Until(t, 10*time.Second, "the mitigation on b", func() bool { _, ok := has(b.store, scope("192.0.2.1"), "r"); return ok })
		// Extended on b (a manual decision): a follows, and nothing echoes.
		b.store.Add(mitigation.Mitigation{Rule: "r", Action: mitigation.ActionBlock, Scope: scope("192.0.2.1"), Expires: now.Add(2 * time.Hour), Origin: "manual"}, now)
		testwait.Until(t, 10*time.Second, "the extension on a", func() bool {
			got, ok := has(a.store, scope("192.0.2.1"), "r")
			return ok && got.Expires.Equal(now.Add(2*time.Hour))
		})
		a.store.Delete(m.ID)
		testwait.Until(t, 10*time.Second, "the delete on b", func() bool { _, ok := has(b.store, scope("192.0.2.1"), "r"); return !ok })
		// A node that starts loads the active set.
		a.store.Add(mitigation.Mitigation{Rule: "r", Action: mitigation.ActionRateLimit, Scope: scope("192.0.2.2"), Expires: now.Add(time.Hour)}, now)
		testwait.Until(t, 10*time.Second, "published", func() bool { conn.mu.Lock(); defer conn.mu.Unlock(); return len(conn.active) == 1 })
		c := startNode(t, "c", conn)
		testwait.Until(t, 10*time.Second, "the active set on c", func() bool { _, ok := has(c.store, scope("192.0.2.2"), "r"); return ok })
		conn.mu.Lock()
		n := len(conn.stream)
		conn.mu.Unlock()
		if n != 4 { // add, extend, delete, add: no echo
			t.Errorf("stream holds %d changes, want 4 (an echo loop?)", n)
		}
	})
}

func TestOutageQueuesChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		conn := newFakeConn()
		a, b := startNode(t, "a", conn), startNode(t, "b", conn)
		testwait.Until(t, 10*time.Second, "both loaded", func() bool { return a.sync.Status().Loaded && b.sync.Status().Loaded })
		conn.mu.Lock()
		conn.down = true
		conn.cond.Broadcast()
		conn.mu.Unlock()
		now := time.Now()
		a.store.Add(mitigation.Mitigation{Rule: "r", Action: mitigation.ActionBlock, Scope: scope("192.0.2.9"), Expires: now.Add(time.Hour)}, now)
		testwait.Until(t, 10*time.Second, "the change queued", func() bool { return a.sync.Status().Pending == 1 })
		conn.mu.Lock()
		conn.down = false
		conn.mu.Unlock()
		testwait.Until(t, 10*time.Second, "the change on b after recovery", func() bool { _, ok := has(b.store, scope("192.0.2.9"), "r"); return ok })
	})
}

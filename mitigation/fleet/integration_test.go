//go:build integration

package fleet

import (
	"testing"
	"time"

	"github.com/guardd/guardd/counting/redis"
	"github.com/guardd/guardd/counting/redis/redistest"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/testwait"
)

func dial(t *testing.T, addr string) *redis.Conn {
	t.Helper()
	c, err := redis.NewConn(redis.Options{Addresses: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestRedisPropagation: a mitigation made on one node is enforced on the
// others through a real redis-server, deletes follow, and a node started
// later loads the active set.
func TestRedisPropagation(t *testing.T) {
	srv := redistest.Start(t, 0)
	a, b := startNode(t, "a", dial(t, srv.Addr)), startNode(t, "b", dial(t, srv.Addr))
	testwait.Until(t, 10*time.Second, "both loaded", func() bool { return a.sync.Status().Loaded && b.sync.Status().Loaded })
	now := time.Now()
	m, _, err := a.store.Add(mitigation.Mitigation{Rule: "r", Action: mitigation.ActionBlock, Scope: scope("198.51.100.7"), Expires: now.Add(time.Hour)}, now)
	if err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	testwait.Until(t, 10*time.Second, "the mitigation on b", func() bool { _, ok := b.store.Lookup(scope("198.51.100.7").Key(), time.Now()); return ok })
	t.Logf("propagated in %v", time.Since(sent))
	b.store.Add(mitigation.Mitigation{Rule: "manual", Action: mitigation.ActionShadowBan, Scope: scope("198.51.100.8"), Expires: now.Add(time.Hour), Origin: "manual"}, now)
	testwait.Until(t, 10*time.Second, "b's manual decision on a", func() bool { _, ok := has(a.store, scope("198.51.100.8"), "manual"); return ok })
	a.store.Delete(m.ID)
	testwait.Until(t, 10*time.Second, "the delete on b", func() bool { _, ok := has(b.store, scope("198.51.100.7"), "r"); return !ok })
	c := startNode(t, "c", dial(t, srv.Addr))
	testwait.Until(t, 10*time.Second, "the active set on c", func() bool {
		_, manual := has(c.store, scope("198.51.100.8"), "manual")
		_, gone := has(c.store, scope("198.51.100.7"), "r")
		return manual && !gone
	})
}

// TestRedisRestart: Redis (with AOF) is killed; a change made meanwhile is
// queued, and after the restart every node has it; the reader resumes from
// its last ID without losing or replaying anything.
func TestRedisRestart(t *testing.T) {
	srv := redistest.Start(t, 0, "--appendonly", "yes", "--appendfsync", "always")
	a, b := startNode(t, "a", dial(t, srv.Addr)), startNode(t, "b", dial(t, srv.Addr))
	testwait.Until(t, 10*time.Second, "both loaded", func() bool { return a.sync.Status().Loaded && b.sync.Status().Loaded })
	now := time.Now()
	a.store.Add(mitigation.Mitigation{Rule: "r", Action: mitigation.ActionBlock, Scope: scope("198.51.100.20"), Expires: now.Add(time.Hour)}, now)
	testwait.Until(t, 10*time.Second, "the first on b", func() bool { _, ok := has(b.store, scope("198.51.100.20"), "r"); return ok })
	srv.Kill()
	a.store.Add(mitigation.Mitigation{Rule: "r", Action: mitigation.ActionBlock, Scope: scope("198.51.100.21"), Expires: now.Add(time.Hour)}, now)
	testwait.Until(t, 10*time.Second, "the second queued", func() bool { return a.sync.Status().Pending == 1 })
	srv.Restart()
	testwait.Until(t, 10*time.Second, "the second on b after the restart", func() bool { _, ok := has(b.store, scope("198.51.100.21"), "r"); return ok })
	if got := b.store.Len(); got != 2 {
		t.Errorf("b holds %d mitigations, want 2", got)
	}
}

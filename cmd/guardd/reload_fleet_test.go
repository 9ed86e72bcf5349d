//go:build integration

package main

import (
	"fmt"
	"testing"

	"github.com/guardd/guardd/counting/redis/redistest"
)

// TestReloadFleet: a fleet daemon reports exactly the keys a reload cannot
// apply: counting.max_keys (the fleet-wide counters' cap, once reported
// applied) and the fleet section's own keys; a change it can apply alongside
// still takes effect.
func TestReloadFleet(t *testing.T) {
	srv := redistest.Start(t, 0)
	dir := t.TempDir()
	writeTestConfig(t, dir, fmt.Sprintf("counting: {max_keys: 1000}\nshadowban: {headers: {X-App: v1}}\nfleet:\n  node: edge-1\n  redis:\n    addresses: [%q]\n", srv.Addr))
	td, log := startDaemonLogged(t, dir)
	defer td.stop(t)
	for _, tc := range []struct {
		name, old, new string
		pending        int
		restart        string
	}{
		{"max_keys", "max_keys: 1000", "max_keys: 10", 1, "fleet: counting.max_keys: needs a restart"},
		{"node and max_keys", "node: edge-1", "node: edge-9", 2, "fleet: fleet.node, counting.max_keys: needs a restart"},
		{"shadowban alongside", "X-App: v1", "X-App: v2", 2, "fleet: fleet.node, counting.max_keys: needs a restart"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			td.rewrite(t, tc.old, tc.new)
			td.d.reload()
			td.wantReload(t, log, false, tc.pending, tc.restart)
		})
	}
	cfg := td.d.cfg.Load()
	if cfg.Fleet.Node != "edge-1" || cfg.Counting.MaxKeys != 10 || cfg.Shadowban.Headers["X-App"] != "v2" {
		t.Errorf("in force: node %s, max_keys %d, X-App %s; want edge-1 (waits for a restart), 10 (the local tables took it), v2",
			cfg.Fleet.Node, cfg.Counting.MaxKeys, cfg.Shadowban.Headers["X-App"])
	}
}

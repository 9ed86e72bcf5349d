package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/guardd/guardd/config"
	"github.com/guardd/guardd/counting"
	"github.com/guardd/guardd/counting/redis"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/fleet"
	"github.com/guardd/guardd/mitigation/throttle"
	"github.com/guardd/guardd/rules"
	"github.com/guardd/guardd/rules/engine"
)

// fleetParts are the daemon's fleet-mode components (docs/fleet.md): the
// Redis connection, the fleet-wide counters of request-time limits, and
// mitigation propagation. nil without a fleet section.
type fleetParts struct {
	conn     *redis.Conn
	counters *redis.Fleet
	sync     *fleet.Sync
}

// fleetDeadline, when not 0, replaces the counting tier's deadline for a
// pipeline to Redis (redis.DefaultDeadline, 20 ms). The tests set it: on a
// loaded test machine the breaker would open on missed deadlines for as
// long as the load lasts, while they test what the fleet propagates (the
// breaker has its own tests in counting/redis, which do the same).
var fleetDeadline time.Duration

func newFleet(cfg *config.Config, store *mitigation.Store, reg prometheus.Registerer, log *slog.Logger) (*fleetParts, error) {
	if cfg.Fleet == nil {
		return nil, nil
	}
	opt, err := cfg.Fleet.Options()
	if err != nil {
		return nil, err
	}
	node, err := cfg.Fleet.NodeName()
	if err != nil {
		return nil, err
	}
	conn, err := redis.NewConn(opt)
	if err != nil {
		return nil, err
	}
	counters, err := redis.New(redis.Config{Node: node, MaxKeys: cfg.Counting.MaxKeys, Deadline: fleetDeadline}, conn, reg, log)
	if err != nil {
		return nil, err
	}
	sync, err := fleet.New(fleet.Config{Node: node}, store, conn, reg, log)
	if err != nil {
		return nil, err
	}
	log.Info("fleet mode", "node", node, "redis", opt.Addresses, "mode", opt.Mode.String())
	return &fleetParts{conn: conn, counters: counters, sync: sync}, nil
}

// newCounter is throttle.Config.NewCounter: each request-time rule counts
// fleet-wide.
func (f *fleetParts) newCounter(r *rules.Rule, lim counting.Limit) (throttle.Counter, error) {
	return f.counters.Counter(redis.Rule{Name: r.Name, Limit: lim, OnError: r.OnStoreError})
}

// engineCounter is pipeline.BuildOptions.NewCounter: detection rules
// count fleet-wide too, each window under its own name ("<rule>/<period>")
// when the rule has several. nil without fleet mode.
func (f *fleetParts) engineCounter() func(r *rules.Rule, lim counting.Limit) (engine.Counter, error) {
	if f == nil {
		return nil
	}
	return func(r *rules.Rule, lim counting.Limit) (engine.Counter, error) {
		if len(r.Windows) <= 1 {
			return f.counters.Counter(redis.Rule{Name: r.Name, Limit: lim, OnError: r.OnStoreError, Detection: true})
		}
		cs := make([]*redis.Counter, len(r.Windows))
		for j, w := range r.Windows {
			wl := lim
			wl.Period, wl.Requests = w.Period, w.Requests
			c, err := f.counters.Counter(redis.Rule{Name: r.Name + "/" + w.Period.String(), Limit: wl, OnError: r.OnStoreError, Detection: true})
			if err != nil {
				return nil, err
			}
			cs[j] = c
		}
		return redis.NewWindows(cs...), nil
	}
}

// engineDistinct is pipeline.BuildOptions.NewDistinct: detection rules
// that count distinct values share their sketches fleet-wide, each window
// under its own name ("<rule>/<period>") when the rule has several. nil
// without fleet mode.
func (f *fleetParts) engineDistinct() func(r *rules.Rule, local []*counting.Distinct) (engine.DistinctCounter, error) {
	if f == nil {
		return nil
	}
	return func(r *rules.Rule, local []*counting.Distinct) (engine.DistinctCounter, error) {
		if len(local) == 1 {
			return f.counters.Distinct(redis.DistinctRule{Name: r.Name}, local[0], redis.DistinctConfig{})
		}
		cs := make([]*redis.DistinctCounter, len(local))
		for j, d := range local {
			c, err := f.counters.Distinct(redis.DistinctRule{Name: r.Name + "/" + time.Duration(d.Period()).String()}, d, redis.DistinctConfig{})
			if err != nil {
				return nil, err
			}
			cs[j] = c
		}
		return redis.NewDistinctWindows(cs...), nil
	}
}

// reloader is fleet mode's part in a reload: the Redis connection, the
// node's name and the fleet-wide counters' cap are taken at start.
func (f *fleetParts) reloader() config.Reloader {
	r := config.Reloader{Name: "fleet", Restart: []string{"fleet"},
		Doc: map[string]string{"counting.max_keys": "in fleet mode the fleet-wide counters' cap waits for a restart"}}
	if f != nil {
		r.Restart = append(r.Restart, "counting.max_keys")
	}
	return r
}

func (f *fleetParts) run(ctx context.Context, g *errgroup.Group) {
	g.Go(func() error { return f.counters.Run(ctx) })
	g.Go(func() error { return f.sync.Run(ctx) })
}

func (f *fleetParts) close() {
	if f != nil {
		f.conn.Close()
	}
}

// fleetStatus is what guardd status shows of the fleet.
type fleetStatus struct {
	Counting redis.Status `json:"counting"`
	Sync     fleet.Status `json:"mitigations"`
	// PerNode are the rules fleet mode does not share (perNodeRules).
	PerNode []string `json:"per_node_rules,omitempty"`
}

// fleetJSON is fleetStatus as guardd status prints it, in snake_case.
type fleetJSON struct {
	Counting struct {
		Node               string              `json:"node"`
		Breaker            string              `json:"breaker"`
		Endpoints          []fleetEndpointJSON `json:"endpoints"`
		LiveNodes          int                 `json:"live_nodes"`
		LastContact        string              `json:"last_contact,omitempty"`
		ClockOffsetSeconds float64             `json:"clock_offset_seconds"`
	} `json:"counting"`
	Sync struct {
		StreamID string `json:"stream_id"`
		Pending  int    `json:"pending"`
		Loaded   bool   `json:"loaded"`
	} `json:"mitigations"`
	PerNode []string `json:"per_node_rules,omitempty"`
}

type fleetEndpointJSON struct {
	Name    string `json:"name"`
	Breaker string `json:"breaker"`
	Slots   int    `json:"slots"` // hash slots it serves (16384 outside Cluster)
}

// MarshalJSON writes s as fleetJSON.
func (s *fleetStatus) MarshalJSON() ([]byte, error) {
	var j fleetJSON
	c := &j.Counting
	c.Node, c.Breaker, c.LiveNodes = s.Counting.Node, s.Counting.Breaker, s.Counting.LiveNodes
	c.ClockOffsetSeconds = s.Counting.ClockOffset.Seconds()
	if !s.Counting.LastContact.IsZero() {
		c.LastContact = s.Counting.LastContact.UTC().Format(time.RFC3339Nano)
	}
	for _, e := range s.Counting.Endpoints {
		c.Endpoints = append(c.Endpoints, fleetEndpointJSON{e.Name, e.Breaker, e.Slots})
	}
	j.Sync.StreamID, j.Sync.Pending, j.Sync.Loaded = s.Sync.StreamID, s.Sync.Pending, s.Sync.Loaded
	j.PerNode = s.PerNode
	return json.Marshal(j)
}

func (f *fleetParts) status(rs []*rules.Rule) *fleetStatus {
	if f == nil {
		return nil
	}
	return &fleetStatus{Counting: f.counters.Status(), Sync: f.sync.Status(), PerNode: perNodeRules(rs)}
}

// perNodeRules names the rules that count on each node alone even in
// fleet mode (docs/fleet.md "What counts per node"), each with why: a
// timing gate (counting.Regularity has no Redis tier; counts of events and
// of distinct values are shared, in every window), or a concurrency limit
// (requests in flight on this node).
func perNodeRules(rs []*rules.Rule) []string {
	var out []string
	for _, r := range rs {
		switch {
		case r.Concurrency > 0:
			out = append(out, r.Name+" (concurrency)")
		case r.Distinct != nil:
			// Fleet-wide, every window: its sketches are shared.
			if r.Regularity != nil {
				out = append(out, r.Name+" (regularity)")
			}
		case r.Regularity != nil:
			out = append(out, r.Name+" (regularity)")
		}
	}
	return out
}

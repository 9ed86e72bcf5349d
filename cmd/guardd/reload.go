package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/guardd/guardd/config"
	"github.com/guardd/guardd/pipeline"
)

// watch reloads on SIGHUP and when the config or a rule file changes.
func (d *daemon) watch(ctx context.Context) error {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	config.Watch(ctx, d.path, 2*time.Second, hup, d.cfg.Load, func(why string) {
		d.log.Info("reloading", "why", why)
		d.reload()
	})
	return nil
}

// reload parses and validates everything first, builds the new rules and
// enrichment, and only then hands the new configuration to every component
// (config.Reload). The configuration kept in force is the new one where a
// change waits for a restart keeps its running value.
func (d *daemon) reload() {
	cfg, err := config.Load(d.path)
	if err != nil {
		d.reloaded(false)
		d.log.Error("reload failed; keeping the running configuration", "err", err)
		return
	}
	cfg.Sources.Stdin = cfg.Sources.Stdin || d.stdinFlag
	for _, w := range cfg.Warnings() {
		d.log.Warn(w)
	}
	rep := config.Reload(d.reloaders, d.startCfg, d.cfg.Load(), cfg)
	if rep.Config == nil {
		d.reloaded(false)
		d.log.Error("reload failed; keeping the running configuration", "err", rep.Failed[0])
		return
	}
	d.cfg.Store(rep.Config)
	for _, r := range rep.Restart {
		d.log.Warn("configuration change not applied until a restart", "change", r)
	}
	for _, err := range rep.Failed {
		d.log.Error("reload: component did not apply the configuration", "err", err)
	}
	// A change that waits for a restart is not a successful reload.
	d.reloaded(rep.OK())
	d.m.restart.Set(float64(len(rep.Pending)))
	d.log.Info("reloaded", "rules", len(d.pipes.Load().Rules().Rules()), "applied", rep.Applied, "restart", rep.Pending)
}

// newReloaders lists the components that take part in a reload, each
// declaring what it applies live and what it reads only at start; the
// decision API's come before the rules', whose SetRules builds the
// throttle rules with the limiter's new settings.
func (d *daemon) newReloaders(cfg *config.Config) []config.Reloader {
	return append(d.decisionReloaders(),
		d.pipes.Reloader(pipeline.BuildOptions{Logger: d.log, Registerer: d.reg, NewCounter: d.fleet.engineCounter(), NewDistinct: d.fleet.engineDistinct()}, d.dec.SetRules),
		pipeline.StoreReloader(d.store),
		d.fleet.reloader(),
		outputsReloader(cfg),
		// Files, syslog sockets, standard input and live capture are
		// opened at start.
		config.Reloader{Name: "sources", Restart: []string{"sources", "fingerprint"}},
		config.Reloader{Name: "admin", Restart: []string{"admin"}},
	)
}

// decisionReloaders are the decision API's parts in a reload, in the order
// they must run: before the rules' reloader, whose SetRules builds the
// throttle rules with the limiter's new settings.
//
//   - shadowban: routes, templates and headers, swapped live.
//   - decision: shed_after live; the listener, its event loops, counting at
//     decision time and the challenge gate are made at start.
//   - throttle: counting.max_keys (new local tables, counts afresh) and
//     throttle_shadow live; the in-flight timeout and the shedding classes
//     and signals are made at start.
//
// They are written here, not in package decision, because config imports
// the mitigation packages: a reloader there would be an import back up.
func (d *daemon) decisionReloaders() []config.Reloader {
	return []config.Reloader{
		{Name: "shadowban", Live: []string{"shadowban"},
			Apply: func(_, n *config.Config) error { return d.shadow.Set(n.Shadowban) }},
		{Name: "decision", Live: []string{"decision.shed_after"},
			Restart: []string{"decision.listen", "decision.loops", "decision.count", "challenge"},
			Apply: func(_, n *config.Config) error {
				d.dec.SetShedAfter(n.Decision.ShedAfter)
				return nil
			}},
		{Name: "throttle", Live: []string{"counting.max_keys", "decision.throttle_shadow"},
			Restart: []string{"decision.in_flight_timeout", "shedding"},
			Doc:     map[string]string{"counting.max_keys": "counters start afresh"},
			Apply: func(_, n *config.Config) error {
				return d.limits.Reconfigure(n.Counting.MaxKeys, n.Decision.ThrottleShadow)
			}},
	}
}

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
	rs := d.dec.Reloaders()
	return append(rs,
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

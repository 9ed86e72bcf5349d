package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"

	"github.com/guardd/guardd/config"
	"github.com/guardd/guardd/mitigation/blocklist"
	"github.com/guardd/guardd/mitigation/crowdsec"
	"github.com/guardd/guardd/mitigation/nftables"
)

// output is a component that takes mitigations to firewalls: it runs until
// ctx ends.
type output struct {
	name string
	run  func(ctx context.Context) error
}

// outputsReloader is the outputs' part in a reload: every one is made at
// start, and the nftables sets hold the allowlist's networks they were made
// with.
func outputsReloader(cfg *config.Config) config.Reloader {
	r := config.Reloader{Name: "outputs", Restart: []string{"crowdsec", "blocklist", "firewall"},
		Doc: map[string]string{"mitigation.allowlist.cidrs": "restart for the nftables sets when firewall.nftables is on"}}
	if _, ok := cfg.NFTables(); ok {
		r.Restart = append(r.Restart, "mitigation.allowlist.cidrs")
	}
	return r
}

// buildOutputs makes the configured firewall-facing components: the
// CrowdSec bouncer API, blocklist feeds and the nginx geo file. Listeners are
// opened here, so a taken port fails the start, not later.
func (d *daemon) buildOutputs(cfg *config.Config) error {
	if cfg.CrowdSec.Listen != "" {
		cs := cfg.CrowdSec.Config
		cs.KeyFile = filepath.Join(cfg.Mitigation.StateDir, crowdsec.KeyFileName)
		srv, err := crowdsec.New(cs, d.store, d.reg, d.log)
		if err != nil {
			return fmt.Errorf("crowdsec: %w", err)
		}
		ln, err := net.Listen("tcp", cfg.CrowdSec.Listen)
		if err != nil {
			return fmt.Errorf("crowdsec.listen: %w", err)
		}
		d.outputs = append(d.outputs, output{"crowdsec", func(ctx context.Context) error { return serve(ctx, ln, srv) }})
	}
	if cfg.Blocklist.Listen != "" {
		h, err := blocklist.NewHandler(cfg.Blocklist.Config, d.store, d.reg, d.log)
		if err != nil {
			return fmt.Errorf("blocklist: %w", err)
		}
		ln, err := net.Listen("tcp", cfg.Blocklist.Listen)
		if err != nil {
			return fmt.Errorf("blocklist.listen: %w", err)
		}
		d.outputs = append(d.outputs, output{"blocklist", func(ctx context.Context) error { return serve(ctx, ln, h) }})
	}
	if _, ok := cfg.NFTables(); ok {
		pc, _ := cfg.NFTables()
		p, err := nftables.New(pc, d.store, d.reg, d.log)
		if err != nil {
			return fmt.Errorf("firewall.nftables: %w", err)
		}
		d.outputs = append(d.outputs, output{"nftables", func(ctx context.Context) error {
			defer p.Close()
			return p.Run(ctx)
		}})
	}
	if cfg.Blocklist.NginxGeo != nil {
		geo, err := blocklist.NewGeo(*cfg.Blocklist.NginxGeo, d.store, d.reg, d.log)
		if err != nil {
			return fmt.Errorf("blocklist.nginx_geo: %w", err)
		}
		d.outputs = append(d.outputs, output{"nginx_geo", geo.Run})
	}
	return nil
}

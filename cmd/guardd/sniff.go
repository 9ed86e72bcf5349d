package main

import (
	"context"
	"fmt"

	"github.com/guardd/guardd/ingest/sniff"
)

// sniff captures live on one interface and feeds the join table that log
// lines read their fingerprints from.
func (d *daemon) sniff(ctx context.Context, ifc string) error {
	cfg := d.cfg.Load()
	records := d.pm.Events.WithLabelValues("sniff")
	err := sniff.RunLive(ctx, sniff.LiveConfig{Interface: ifc, BPF: cfg.Fingerprint.BPF, Sniff: sniff.Config{DisableJA4H: cfg.Fingerprint.DisableJA4H},
		Registerer: d.reg, Logger: d.log}, func(r *sniff.Record) {
		d.join.Put(r)
		records.Inc()
	})
	if err != nil {
		return fmt.Errorf("fingerprint.interfaces: %w", err)
	}
	return nil
}

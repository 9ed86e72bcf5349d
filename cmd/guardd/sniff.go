package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/guardd/guardd/ingest/capture"
	"github.com/guardd/guardd/ingest/sniff"
)

// sniff captures live on one interface and feeds the join table that log
// lines read their fingerprints from.
func (d *daemon) sniff(ctx context.Context, ifc string) error {
	cfg := d.cfg.Load()
	src, err := capture.OpenLive(capture.LiveConfig{Interface: ifc, BPF: cfg.Fingerprint.BPF, ReadTimeout: 100 * time.Millisecond})
	if err != nil {
		return fmt.Errorf("fingerprint.interfaces: %s: %w", ifc, err)
	}
	defer src.Close()
	records := d.pm.Events.WithLabelValues("sniff")
	sn, err := sniff.New(sniff.Config{DisableJA4H: cfg.Fingerprint.DisableJA4H}, func(r *sniff.Record) {
		d.join.Put(r)
		records.Inc()
	})
	if err != nil {
		return err
	}
	defer sn.Close()
	stats := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "guardd_sniff_kernel_drops", Help: "Packets the kernel dropped before guardd read them, since the capture started.",
		ConstLabels: prometheus.Labels{"interface": ifc}}, func() float64 {
		_, dropped, _ := src.Stats()
		return float64(dropped)
	})
	d.reg.MustRegister(stats)
	defer d.reg.Unregister(stats)
	go func() { <-ctx.Done(); src.Close() }()
	d.log.Info("capturing", "interface", ifc)
	var p capture.Packet
	lastFlush := time.Now()
	for {
		err := src.ReadPacket(&p)
		switch {
		case err == nil:
			sn.HandlePacket(&p)
		case errors.Is(err, capture.ErrTimeout):
		case errors.Is(err, net.ErrClosed) || ctx.Err() != nil:
			return nil
		default:
			return fmt.Errorf("capture %s: %w", ifc, err)
		}
		if time.Since(lastFlush) > time.Second {
			lastFlush = time.Now()
			sn.Flush(lastFlush)
		}
	}
}

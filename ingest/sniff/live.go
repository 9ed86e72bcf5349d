package sniff

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/guardd/guardd/ingest/capture"
)

// LiveConfig configures RunLive.
type LiveConfig struct {
	Interface string // required
	BPF       string // "" means capture's default filter
	Sniff     Config
	// Registerer gets guardd_sniff_kernel_drops_total{interface} while the
	// capture runs; nil: not exported.
	Registerer prometheus.Registerer
	Logger     *slog.Logger // nil: discard
}

// RunLive captures on one interface (AF_PACKET, CAP_NET_RAW) and hands
// every record to emit, until ctx ends (then it returns nil). The drop counter
// is registered once the capture is open.
func RunLive(ctx context.Context, cfg LiveConfig, emit func(*Record)) error {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	src, err := capture.OpenLive(capture.LiveConfig{Interface: cfg.Interface, BPF: cfg.BPF, ReadTimeout: 100 * time.Millisecond})
	if err != nil {
		return fmt.Errorf("sniff: %s: %w", cfg.Interface, err)
	}
	defer src.Close()
	sn, err := New(cfg.Sniff, emit)
	if err != nil {
		return err
	}
	defer sn.Close()
	if cfg.Registerer != nil {
		drops := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "guardd_sniff_kernel_drops_total", Help: "Packets the kernel dropped before guardd read them, since the capture started.",
			ConstLabels: prometheus.Labels{"interface": cfg.Interface}}, func() float64 {
			_, dropped, _ := src.Stats()
			return float64(dropped)
		})
		cfg.Registerer.MustRegister(drops)
		defer cfg.Registerer.Unregister(drops)
	}
	stop := context.AfterFunc(ctx, func() { src.Close() })
	defer stop()
	cfg.Logger.Info("capturing", "interface", cfg.Interface)
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
			return fmt.Errorf("sniff: capture %s: %w", cfg.Interface, err)
		}
		if now := time.Now(); now.Sub(lastFlush) > time.Second {
			lastFlush = now
			sn.Flush(now)
		}
	}
}

package nftables_test

import (
	"context"
	"log/slog"
	"os"
	"os/signal"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/nftables"
)

// The daemon runs the pusher beside the store; both stop with the context.
func Example() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	reg := prometheus.NewRegistry()
	store, err := mitigation.New(mitigation.Config{StateDir: "/var/lib/guardd"}, reg, log)
	if err != nil {
		log.Error("store", "err", err)
		return
	}
	defer store.Close()
	pusher, err := nftables.New(nftables.Config{
		Actions: []mitigation.Action{mitigation.ActionFirewall, mitigation.ActionBlock},
		Hooks:   []string{"input", "forward"},
	}, store, reg, log)
	if err != nil {
		log.Error("nftables", "err", err)
		return
	}
	defer pusher.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return store.Run(ctx) })
	g.Go(func() error { return pusher.Run(ctx) })
	if err := g.Wait(); err != nil {
		log.Error("run", "err", err)
	}
}

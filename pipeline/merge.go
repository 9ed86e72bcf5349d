package pipeline

import (
	"context"

	"golang.org/x/sync/errgroup"
)

// Merge returns a Source that reads srcs at once, each on its own goroutine
// with a Writer of its own: files being tailed, a syslog listener and
// standard input feed one run. Each Source's lines are counted in the order
// it wrote them, and its marks reach Config.Applied in that order; lines of
// different Sources interleave as they arrive. A Source that ends (standard
// input closed) leaves the others running; one that fails ends them all,
// and Read returns its error.
func Merge(srcs ...Source) Source { return merged(srcs) }

type merged []Source

func (m merged) Read(ctx context.Context, w *Writer) error {
	if len(m) == 1 {
		return m[0].Read(ctx, w)
	}
	g, ctx := errgroup.WithContext(ctx)
	ws := make([]*Writer, len(m))
	for i, src := range m {
		sw := &Writer{ctx: ctx, free: w.free, work: w.work, now: w.now, seq: w.seq}
		ws[i] = sw
		g.Go(func() error {
			if err := src.Read(ctx, sw); err != nil {
				return err
			}
			sw.flush()
			return nil
		})
	}
	err := g.Wait()
	for _, sw := range ws {
		w.lines += sw.lines
	}
	return err
}

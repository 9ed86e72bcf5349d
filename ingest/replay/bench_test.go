package replay_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/guardd/guardd/bench/loggen"
	"github.com/guardd/guardd/ingest/replay"
)

// BenchmarkReplay replays a combined-format log with the built-in rules and
// reports lines per second; b.N counts whole replays.
func BenchmarkReplay(b *testing.B) {
	dir := b.TempDir()
	log := filepath.Join(dir, "access.log")
	f, err := os.Create(log)
	if err != nil {
		b.Fatal(err)
	}
	_, err = loggen.Generate(f, loggen.Config{Seed: 3, Benign: 2000, Format: loggen.FormatCombined})
	if err != nil {
		b.Fatal(err)
	}
	f.Close()
	b.ReportAllocs()
	var lines int64
	for b.Loop() {
		b.StopTimer()
		p := newPipeline(b, "combined", "") // fresh counters: the log's times start over
		b.StartTimer()
		st, err := replay.Run(context.Background(), replay.Config{Pipeline: p}, []string{log})
		if err != nil {
			b.Fatal(err)
		}
		lines += st.Lines
	}
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(lines), "ns/line")
}

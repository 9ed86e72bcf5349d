package replay_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/guardd/guardd/bench/loggen"
	"github.com/guardd/guardd/config"
	"github.com/guardd/guardd/cputime"
	"github.com/guardd/guardd/pipeline"
	"github.com/guardd/guardd/pipeline/replay"
)

// BenchmarkReplay replays a combined-format log with the built-in rules and
// reports lines per second; b.N counts whole replays.
func BenchmarkReplay(b *testing.B) {
	benchReplay(b, func() *pipeline.Pipeline { return newPipeline(b, "combined", "") })
}

// BenchmarkReplayNoRules replays the same log with one rule that counts
// nothing: what reading, parsing, enrichment and sequencing cost around rule
// evaluation.
func BenchmarkReplayNoRules(b *testing.B) {
	benchReplay(b, func() *pipeline.Pipeline {
		cfg := config.Default()
		cfg.Log.Format = "combined"
		cfg.Rules.DisableBuiltin = true
		cfg.Rules.Dirs = []string{"testdata/norules"}
		p, err := pipeline.Build(cfg, pipeline.BuildOptions{})
		if err != nil {
			b.Fatal(err)
		}
		return p
	})
}

func benchReplay(b *testing.B, build func() *pipeline.Pipeline) {
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
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		p := build() // fresh counters: the log's times start over
		b.StartTimer()
		start := cputime.Process()
		st, err := replay.Run(context.Background(), replay.Config{Pipeline: p}, []string{log})
		if err != nil {
			b.Fatal(err)
		}
		cpu += cputime.Since(start)
		lines += st.Lines
	}
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(lines), "ns/line")
	// CPU time of the whole process, all goroutines: on a shared machine it
	// swings less than the wall clock.
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(lines), "cpu-ns/line")
}

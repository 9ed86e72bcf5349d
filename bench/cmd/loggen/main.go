// Command loggen writes a synthetic labelled nginx access log (see package
// bench/loggen) for benchmarks and demos.
//
//	go run ./bench/cmd/loggen -benign 3000 -format combined -o access.log
package main

import (
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/guardd/guardd/bench/loggen"
)

func main() {
	var (
		out      = flag.String("o", "-", "output file (.gz compresses); - for stdout")
		benign   = flag.Int("benign", 3000, "benign clients")
		duration = flag.Duration("duration", time.Hour, "time the log spans")
		format   = flag.String("format", loggen.FormatCombined, "combined or guardd")
		seed     = flag.Uint64("seed", 1, "random seed")
		noAttack = flag.Bool("no-attack", false, "benign traffic only")
		labels   = flag.String("labels", "", "write the labels as JSON to this file")
		mmdb     = flag.String("mmdb", "", "write a MaxMind database of the clients' networks to this file")
	)
	flag.Parse()
	if err := run(*out, loggen.Config{Seed: *seed, Benign: *benign, Duration: *duration, Format: *format, NoAttack: *noAttack}, *labels, *mmdb); err != nil {
		fmt.Fprintln(os.Stderr, "loggen:", err)
		os.Exit(1)
	}
}

func run(out string, cfg loggen.Config, labelsPath, mmdb string) error {
	var w io.Writer = os.Stdout
	var closers []io.Closer
	if out != "-" {
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		w, closers = f, append(closers, f)
		if strings.HasSuffix(out, ".gz") {
			zw := gzip.NewWriter(f)
			w, closers = zw, append([]io.Closer{zw}, closers...)
		}
	}
	l, err := loggen.Generate(w, cfg)
	if err != nil {
		return err
	}
	for _, c := range closers {
		if err := c.Close(); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "loggen: %d lines, %d benign clients, %d attacks\n", l.Lines, len(l.BenignIPs), len(l.Attacks))
	if mmdb != "" {
		if err := l.GeoDB(mmdb); err != nil {
			return err
		}
	}
	if labelsPath != "" {
		b, err := json.MarshalIndent(l, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(labelsPath, b, 0o644)
	}
	return nil
}

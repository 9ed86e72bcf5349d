package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/guardd/guardd/config"
	"github.com/guardd/guardd/ingest/syslog"
)

// benchLines returns the shipped sample's lines (combined format).
func benchLines(b *testing.B) [][]byte {
	b.Helper()
	f, err := os.Open("../../testdata/access.log.gz")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		b.Fatal(err)
	}
	var out [][]byte
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		out = append(out, bytes.Clone(sc.Bytes()))
	}
	return out
}

// BenchmarkSources measures the daemon's throughput from each source in
// one run, the same lines, the built-in rules: a tailed file, standard
// input, and syslog over a Unix datagram socket, UDP and TCP (the sender,
// one datagram or frame per line as nginx sends them, shares the machine).
// b.N lines are sent; the time is until the last is counted. UDP reports
// what the kernel dropped (dropped/op); the others cannot drop.
//
//	go test -run XXX -bench BenchmarkSources -benchtime 200000x ./cmd/guardd
func BenchmarkSources(b *testing.B) {
	lines := benchLines(b)
	for _, src := range []string{"file", "stdin", "unixgram", "udp", "tcp"} {
		b.Run(src, func(b *testing.B) {
			dir := b.TempDir()
			writeTestConfig(b, dir, "")
			cfgPath := filepath.Join(dir, "guardd.yaml")
			raw, _ := os.ReadFile(cfgPath)
			conf := strings.Replace(string(raw), "rules: {disable_builtin: true, ", "rules: {", 1)
			var listen string
			switch src {
			case "unixgram":
				listen = "unixgram:" + filepath.Join(dir, "s.sock")
			case "udp", "tcp":
				listen = src + ":127.0.0.1:0"
			}
			if listen != "" {
				conf = strings.Replace(conf, "sources: {", fmt.Sprintf("sources: {syslog: {listen: [%q], read_buffer: 8388608}, ", listen), 1)
			}
			if src == "stdin" {
				conf = strings.Replace(conf, "sources: {", "sources: {stdin: true, ", 1)
			}
			os.WriteFile(cfgPath, []byte(conf), 0o644)
			cfg, err := config.Load(cfgPath)
			if err != nil {
				b.Fatal(err)
			}
			d, err := newDaemon(cfgPath, cfg, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
			if err != nil {
				b.Fatal(err)
			}
			pr, pw, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			defer pw.Close()
			d.stdin = pr
			if err := d.listen(); err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- d.Run(ctx) }()
			defer func() { cancel(); <-done }()

			var send func(line []byte) error
			var flush func() error
			header := []byte("<190>Nov 28 04:00:00 web-1 nginx: ")
			msg := make([]byte, 0, 4096)
			switch src {
			case "file":
				f, err := os.OpenFile(filepath.Join(dir, "access.log"), os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				w := bufio.NewWriterSize(f, 64<<10)
				send = func(l []byte) error { w.Write(l); return w.WriteByte('\n') }
				flush = w.Flush
			case "stdin":
				w := bufio.NewWriterSize(pw, 64<<10)
				send = func(l []byte) error { w.Write(l); return w.WriteByte('\n') }
				flush = w.Flush
			case "unixgram", "udp":
				network := map[string]string{"unixgram": "unixgram", "udp": "udp"}[src]
				c, err := net.Dial(network, d.syslog.Addrs()[0].String())
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				send = func(l []byte) error {
					msg = append(append(msg[:0], header...), l...)
					for {
						_, err := c.Write(msg)
						if err == nil || !isNoBuffer(err) {
							return err
						}
						time.Sleep(10 * time.Microsecond) // the receiver's queue is full: wait as nginx cannot
					}
				}
				flush = func() error { return nil }
			case "tcp":
				c, err := net.Dial("tcp", d.syslog.Addrs()[0].String())
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				w := bufio.NewWriterSize(c, 64<<10)
				send = func(l []byte) error {
					w.WriteString(strconv.Itoa(len(header) + len(l)))
					w.WriteByte(' ')
					w.Write(header)
					_, err := w.Write(l)
					return err
				}
				flush = w.Flush
			}
			events := d.pm.Events.WithLabelValues("nginx_log")
			b.ResetTimer()
			for i := range b.N {
				if err := send(lines[i%len(lines)]); err != nil {
					b.Fatal(err)
				}
			}
			if err := flush(); err != nil {
				b.Fatal(err)
			}
			var dropped int64
			deadline := time.Now().Add(5 * time.Minute)
			for {
				if d.syslog != nil {
					dropped = d.syslog.Stats(syslog.UDP).Dropped
				}
				if int64(testutil.ToFloat64(events))+dropped >= int64(b.N) {
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("%v of %d lines counted", testutil.ToFloat64(events), b.N)
				}
				// Not testwait: its backoff (up to 20 ms) would count in
				// the time measured; a 1 ms poll costs at most 1 ms of it.
				time.Sleep(time.Millisecond)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
			b.ReportMetric(float64(dropped)/float64(b.N), "dropped/op")
		})
	}
}

func isNoBuffer(err error) bool {
	return strings.Contains(err.Error(), "no buffer space") || strings.Contains(err.Error(), "resource temporarily unavailable")
}

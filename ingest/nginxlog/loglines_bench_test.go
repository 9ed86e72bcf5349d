package nginxlog_test

import (
	"bytes"
	"testing"

	"github.com/guardd/guardd/bench/loggen"
	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/cputime"
	"github.com/guardd/guardd/ingest/nginxlog"
)

// BenchmarkParseLog parses the lines of a generated log (bench/loggen: the
// mix of IPv4 and IPv6 clients, referers, queries, agents and attacks that
// guardd replay is measured on) one after another, as a replay worker does
// with its Cache; an op is one line.
func BenchmarkParseLog(b *testing.B) {
	var log bytes.Buffer
	if _, err := loggen.Generate(&log, loggen.Config{Seed: 5, Benign: 300, Format: loggen.FormatCombined}); err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(log.Bytes(), []byte{'\n'}), []byte{'\n'})
	f, c := nginxlog.MustCompile("combined"), new(nginxlog.Cache)
	buf := make([]byte, 0, 1<<16)
	var e characteristics.Event
	var size int64
	for _, l := range lines {
		size += int64(len(l))
	}
	b.SetBytes(size / int64(len(lines)))
	b.ReportAllocs()
	cpu := cputime.Process()
	i := 0
	for b.Loop() {
		buf = append(buf[:0], lines[i]...) // Parse may unescape in place
		if err := f.ParseCache(buf, &e, c); err != nil {
			b.Fatal(err)
		}
		if i++; i == len(lines) {
			i = 0
		}
	}
	cputime.Report(b, cpu, int64(b.N), "cpu-ns/op")
}

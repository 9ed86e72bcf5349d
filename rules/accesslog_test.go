package rules

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/ingest/nginxlog"
	"github.com/guardd/guardd/rules/builtin"
)

// accessLogLines reads the lines of testdata/access.log.gz, a labelled
// realistic log (browsing, assets, APIs, logins, bots and attacks).
func accessLogLines(tb testing.TB) [][]byte {
	tb.Helper()
	f, err := os.Open("../testdata/access.log.gz")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	var lines [][]byte
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		lines = append(lines, bytes.Clone(sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return lines
}

// BenchmarkAccessLog measures the built-in library over every line of a
// realistic log, each parsed into a reused event as replay does: "parse" is
// the parse alone, "parse+eval" adds Set.Eval (normalisation and signature
// scans included, since they are computed on first use). The difference is
// the rules' cost per real line.
func BenchmarkAccessLog(b *testing.B) {
	lines := accessLogLines(b)
	s, err := Builtin(Options{})
	if err != nil {
		b.Fatal(err)
	}
	f := nginxlog.MustCompile(nginxlog.Combined)
	for _, eval := range []bool{false, true} {
		name := "parse"
		if eval {
			name = "parse+eval"
		}
		b.Run(name, func(b *testing.B) {
			var e characteristics.Event
			var m Matches
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				if err := f.Parse(lines[i%len(lines)], &e); err == nil && eval {
					s.Eval(&e, &m)
				}
				i++
			}
		})
	}
}

func TestAccessLogAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the whole test log")
	}
	lines := accessLogLines(t)
	s, err := Builtin(Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := nginxlog.MustCompile(nginxlog.Combined)
	var e characteristics.Event
	var m Matches
	for _, l := range lines { // warm the buffers and the memo
		if f.Parse(l, &e) == nil {
			s.Eval(&e, &m)
		}
	}
	i := 0
	allocs := testing.AllocsPerRun(len(lines), func() {
		if f.Parse(lines[i%len(lines)], &e) == nil {
			s.Eval(&e, &m)
		}
		i++
	})
	// libinjection allocates when it parses a suspicious value; those are
	// a few attack lines of the log.
	if allocs > 0.05 {
		t.Errorf("parse+eval of the test log: %v allocs per line, want ~0", allocs)
	}
	t.Logf("%v allocs per line", allocs)
}

// BenchmarkAccessLogRule measures each built-in rule alone over the test
// log (parse included: subtract BenchmarkAccessLog/parse).
func BenchmarkAccessLogRule(b *testing.B) {
	lines := accessLogLines(b)
	f := nginxlog.MustCompile(nginxlog.Combined)
	entries, err := fs.Glob(builtin.FS, "*.rego")
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range entries {
		if strings.HasSuffix(name, "_test.rego") {
			continue
		}
		data, _ := fs.ReadFile(builtin.FS, name)
		s, err := Load(fstest.MapFS{name: {Data: data}}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(strings.TrimSuffix(name, ".rego"), func(b *testing.B) {
			var e characteristics.Event
			var m Matches
			i := 0
			for b.Loop() {
				if f.Parse(lines[i%len(lines)], &e) == nil {
					s.Eval(&e, &m)
				}
				i++
			}
		})
	}
}

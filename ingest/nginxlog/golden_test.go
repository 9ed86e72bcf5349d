package nginxlog

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/guardd/guardd/characteristics"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the parser's output")

// TestGolden parses testdata/NAME.log with the format in testdata/NAME.format
// ("json" for JSON lines) and compares the events, one JSON object per line,
// with testdata/NAME.golden. Lines are read through Reader.
func TestGolden(t *testing.T) {
	logs, err := filepath.Glob("testdata/*.log")
	if err != nil || len(logs) == 0 {
		t.Fatalf("no testdata/*.log: %v", err)
	}
	for _, path := range logs {
		name := strings.TrimSuffix(filepath.Base(path), ".log")
		t.Run(name, func(t *testing.T) {
			spec, err := os.ReadFile(filepath.Join("testdata", name+".format"))
			if err != nil {
				t.Fatal(err)
			}
			parse := ParseJSON
			if s := strings.TrimSpace(string(spec)); s != "json" {
				f, err := Compile(s)
				if err != nil {
					t.Fatalf("%s.format: %v", name, err)
				}
				parse = f.Parse
			}
			r, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var out bytes.Buffer
			var e characteristics.Event
			for {
				line, err := r.Next()
				if err != nil {
					break
				}
				v := view{}
				if err := parse(line, &e); err != nil {
					v.Error = (&LineError{File: filepath.Base(path), Line: r.Line(), Err: err}).Error()
				} else {
					v = viewOf(&e)
				}
				v.Line = r.Line()
				out.WriteString(v.String())
				out.WriteByte('\n')
			}
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				gl, wl := strings.Split(out.String(), "\n"), strings.Split(string(want), "\n")
				for i := 0; i < max(len(gl), len(wl)); i++ {
					var g, w string
					if i < len(gl) {
						g = gl[i]
					}
					if i < len(wl) {
						w = wl[i]
					}
					if g != w {
						t.Errorf("%s line %d:\n got %s\nwant %s", golden, i+1, g, w)
					}
				}
			}
		})
	}
}

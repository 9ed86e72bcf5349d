package sniff

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// captures returns the ground-truth captures of testdata (made on lo by
// make-captures.sh).
func captures(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("testdata/*.pcap")
	if err != nil {
		t.Fatal(err)
	}
	ng, _ := filepath.Glob("testdata/*.pcapng")
	files = append(files, ng...)
	if len(files) == 0 {
		t.Fatal("no captures in testdata")
	}
	return files
}

// jsonLines runs a file through ReadFile and returns its --json output.
func jsonLines(t *testing.T, path string, cfg Config) []byte {
	t.Helper()
	var out []byte
	if _, err := ReadFile(path, cfg, func(r *Record) {
		out = r.AppendJSON(out)
		out = append(out, '\n')
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGolden compares the records of every capture with its golden file, the
// output of `guardd fingerprint --json`. The JA3 strings in the golden files
// were checked against tshark 4.0.17 by TestTsharkJA3 (integration).
func TestGolden(t *testing.T) {
	for _, path := range captures(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			got := jsonLines(t, path, Config{})
			golden := strings.TrimSuffix(path, filepath.Ext(path)) + ".golden"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from %s:\ngot:\n%s\nwant:\n%s", path, golden, got, want)
			}
			for i, line := range bytes.Split(bytes.TrimSuffix(got, []byte("\n")), []byte("\n")) {
				var m map[string]any
				if len(line) > 0 && json.Unmarshal(line, &m) != nil {
					t.Errorf("line %d is not JSON: %s", i+1, line)
				}
			}
		})
	}
}

// TestWrappedSame checks that every re-wrapped copy of tls13.pcap (VLAN,
// QinQ, GRE, ERSPAN II, VXLAN, SLL, SLL2, NULL) gives the records of the
// original.
func TestWrappedSame(t *testing.T) {
	want := jsonLines(t, "testdata/tls13.pcap", Config{})
	if len(want) == 0 {
		t.Fatal("tls13.pcap gives no record")
	}
	for _, w := range []string{"vlan", "qinq", "gre", "erspan2", "vxlan", "sll", "sll2", "null"} {
		t.Run(w, func(t *testing.T) {
			if got := jsonLines(t, "testdata/tls13-"+w+".pcap", Config{}); !bytes.Equal(got, want) {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// BenchmarkReadFile runs the ground-truth TLS captures through ReadFile,
// records rendered as JSON: the per-handshake cost of guardd fingerprint.
func BenchmarkReadFile(b *testing.B) {
	files := []string{"testdata/tls13.pcap", "testdata/go-tls.pcap", "testdata/hrr.pcap", "testdata/tls12.pcap"}
	if f := os.Getenv("SNIFF_BENCH_PCAP"); f != "" {
		files = []string{f} // e.g. a capture from bench/fingerprint.sh's generator
	}
	var line []byte
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		for _, f := range files {
			if _, err := ReadFile(f, Config{}, func(r *Record) {
				line = r.AppendJSON(line[:0])
				n++
			}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "hellos/s")
}

// TestReadFileTruncated: a file cut inside a packet keeps the records before
// the cut and says so; a file that is not a capture is an error naming it.
func TestReadFileTruncated(t *testing.T) {
	data, err := os.ReadFile("testdata/http.pcap")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cut := filepath.Join(dir, "cut.pcap")
	if err := os.WriteFile(cut, data[:len(data)-10], 0o644); err != nil {
		t.Fatal(err)
	}
	n := 0
	st, err := ReadFile(cut, Config{}, func(*Record) { n++ })
	if err != nil || !st.Truncated || n == 0 {
		t.Fatalf("ReadFile(cut) = %d records, truncated %v, err %v", n, st.Truncated, err)
	}
	bad := filepath.Join(dir, "bad.pcap")
	os.WriteFile(bad, []byte("not a capture file, just text\n"), 0o644)
	if _, err := ReadFile(bad, Config{}, func(*Record) {}); err == nil || !strings.Contains(err.Error(), "bad.pcap") {
		t.Fatalf("ReadFile(bad) err = %v", err)
	}
	if err := ReadFiles([]string{"testdata/tls13.pcap", bad}, Config{}, func(*Record) {}); err == nil {
		t.Fatal("ReadFiles with a bad file: no error")
	}
}

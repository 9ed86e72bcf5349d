package nginxlog

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// readAll returns the lines of r and their Truncated flags.
func readAll(t *testing.T, r *Reader) (lines []string, cut []bool) {
	t.Helper()
	for {
		line, err := r.Next()
		if err == io.EOF {
			return lines, cut
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		lines = append(lines, string(line))
		cut = append(cut, r.Truncated())
		if r.Line() != len(lines) {
			t.Fatalf("Line() = %d after %d lines", r.Line(), len(lines))
		}
	}
}

func gzipped(t *testing.T, members ...string) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, m := range members {
		w := gzip.NewWriter(&b)
		if _, err := w.Write([]byte(m)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

func TestReader(t *testing.T) {
	long := strings.Repeat("x", 100)
	huge := strings.Repeat("y", 1<<20)
	tests := []struct {
		name   string
		data   []byte
		max    int
		lines  []string
		cut    []bool
		ntrunc int
	}{
		{name: "plain", data: []byte("a\nbb\n\nccc\n"), lines: []string{"a", "bb", "", "ccc"}, cut: []bool{false, false, false, false}},
		{name: "no-final-newline", data: []byte("a\nb"), lines: []string{"a", "b"}, cut: []bool{false, false}},
		{name: "crlf", data: []byte("a\r\nb\r\n"), lines: []string{"a", "b"}, cut: []bool{false, false}},
		{name: "empty", data: nil},
		{name: "gzip", data: gzipped(t, "a\nbb\n"), lines: []string{"a", "bb"}, cut: []bool{false, false}},
		{name: "gzip-members", data: gzipped(t, "a\nb", "b\nc\n"), lines: []string{"a", "bb", "c"}, cut: []bool{false, false, false}},
		{name: "zstd", data: zstded(t, "a\nbb\n"), lines: []string{"a", "bb"}, cut: []bool{false, false}},
		{name: "zstd-frames", data: append(zstded(t, "a\nb"), zstded(t, "b\nc\n")...), lines: []string{"a", "bb", "c"}, cut: []bool{false, false, false}},
		{name: "zstd-magic-prefix-only", data: []byte{0x28, 0xb5, 0x2f}, lines: []string{"\x28\xb5\x2f"}, cut: []bool{false}},
		{name: "one-byte-not-gzip", data: []byte{0x1f}, lines: []string{"\x1f"}, cut: []bool{false}},
		{name: "long", max: 10, data: []byte("short\n" + long + "\nafter\n" + long),
			lines: []string{"short", long[:10], "after", long[:10]}, cut: []bool{false, true, false, true}, ntrunc: 2},
		{name: "huge-default-cap", data: []byte(huge + "\nz\n" + huge[:DefaultMaxLine] + "\n"),
			lines: []string{huge[:DefaultMaxLine], "z", huge[:DefaultMaxLine]}, cut: []bool{true, false, false}, ntrunc: 1},
		{name: "long-gzip", max: 10, data: gzipped(t, long+"\nafter\n"),
			lines: []string{long[:10], "after"}, cut: []bool{true, false}, ntrunc: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewReader(bytes.NewReader(tc.data), tc.name, ReaderConfig{MaxLine: tc.max})
			if err != nil {
				t.Fatal(err)
			}
			lines, cut := readAll(t, r)
			if !equal(lines, tc.lines) || !equalBool(cut, tc.cut) || r.TruncatedLines() != tc.ntrunc {
				t.Errorf("got %q %v %d, want %q %v %d", lines, cut, r.TruncatedLines(), tc.lines, tc.cut, tc.ntrunc)
			}
			if _, err := r.Next(); err != io.EOF {
				t.Errorf("Next after EOF = %v", err)
			}
		})
	}
}

func zstded(t *testing.T, data string) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := zstd.NewWriter(&b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalBool(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestReaderFiles writes a plain and a gzip file with a name that lies about
// the compression, and reads both back in batches.
func TestReaderFiles(t *testing.T) {
	var want []string
	var plain bytes.Buffer
	for i := range 5000 {
		line := strings.Repeat(string(rune('a'+i%26)), i%300)
		want = append(want, line)
		plain.WriteString(line + "\n")
	}
	dir := t.TempDir()
	files := map[string][]byte{
		"access.log":    plain.Bytes(),
		"access.log.gz": plain.Bytes(),              // not gzip despite its name
		"access.log.1":  gzipped(t, plain.String()), // gzip despite its name
		"access.log.2":  zstded(t, plain.String()),  // zstd, rotated by a compresscmd
	}
	for name, data := range files {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var got []string
			var b Batch
			for {
				err := r.ReadBatch(&b, 777)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				for i := range b.Len() {
					if b.LineNumber(i) != len(got)+1 || b.Truncated(i) {
						t.Fatalf("line %d: LineNumber %d Truncated %v", len(got)+1, b.LineNumber(i), b.Truncated(i))
					}
					got = append(got, string(b.Line(i)))
				}
			}
			if !equal(got, want) {
				t.Errorf("read %d lines, want %d (or contents differ)", len(got), len(want))
			}
			if err := r.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
		})
	}
}

func TestReaderErrors(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "missing.log")); err == nil || !strings.Contains(err.Error(), "nginxlog: open") {
		t.Errorf("Open(missing) = %v", err)
	}
	if _, err := NewReader(bytes.NewReader([]byte{0x1f, 0x8b, 0}), "bad.gz", ReaderConfig{}); err == nil || !strings.Contains(err.Error(), "nginxlog: bad.gz: ") {
		t.Errorf("NewReader(bad gzip header) = %v", err)
	}
	if _, err := NewReader(bytes.NewReader(nil), "x", ReaderConfig{MaxLine: -1}); err == nil {
		t.Error("NewReader(MaxLine -1) accepted")
	}
	// A gzip stream cut short gives its lines, then an error naming the file.
	data := gzipped(t, strings.Repeat("line\n", 10000))
	r, err := NewReader(bytes.NewReader(data[:len(data)-10]), "cut.gz", ReaderConfig{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		_, err := r.Next()
		if err == nil {
			n++
			continue
		}
		if err == io.EOF || !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "nginxlog: cut.gz: after line") {
			t.Errorf("after %d lines: %v, want unexpected EOF naming the file", n, err)
		}
		break
	}
	// ReadBatch hands over the lines before the error, then the error.
	r, err = NewReader(bytes.NewReader(data[:len(data)-10]), "cut.gz", ReaderConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	m := 0
	for {
		err := r.ReadBatch(&b, 4096)
		if err != nil {
			if !errors.Is(err, io.ErrUnexpectedEOF) || b.Len() != 0 || m != n {
				t.Errorf("ReadBatch after %d lines (Next saw %d): %v with %d lines", m, n, err, b.Len())
			}
			break
		}
		m += b.Len()
	}
}

package nginxlog

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readLines returns what Next gives: the lines, their cut flags, Line after
// each, and the error that ends them (io.EOF at a clean end).
func readLines(r *Reader) (lines []string, cut []bool, err error) {
	for {
		line, err := r.Next()
		if err != nil {
			return lines, cut, err
		}
		lines = append(lines, string(line))
		cut = append(cut, r.Truncated())
	}
}

// readBlocks reads r with ReadBlock into a buffer of size bytes, calling Next
// instead every mix-th call (0: never), and splits the blocks with SplitLine.
func readBlocks(t *testing.T, r *Reader, size, mix int) (lines []string, cut []bool, err error) {
	t.Helper()
	dst := make([]byte, size)
	for call := 1; ; call++ {
		if mix > 0 && call%mix == 0 {
			line, err := r.Next()
			if err != nil {
				return lines, cut, err
			}
			lines = append(lines, string(line))
			cut = append(cut, r.Truncated())
			continue
		}
		before := r.Line()
		for i := range dst {
			dst[i] = 0xAA // what ReadBlock did not write shows
		}
		n, k, err := r.ReadBlock(dst)
		if err != nil {
			if n != 0 || k != 0 {
				t.Fatalf("ReadBlock: %d bytes, %d lines with error %v", n, k, err)
			}
			return lines, cut, err
		}
		if k == 0 || n == 0 || dst[n-1] != '\n' || bytes.Count(dst[:n], []byte{'\n'}) != k || r.Line() != before+k {
			t.Fatalf("ReadBlock: %d bytes, %d lines, Line %d after %d: %q", n, k, r.Line(), before, dst[:n])
		}
		for block := dst[:n]; len(block) > 0; {
			var line []byte
			var c bool
			line, block, c = SplitLine(block, r.MaxLine())
			lines = append(lines, string(line))
			cut = append(cut, c)
		}
	}
}

// errBroken ends a source that fails once its data is read.
var errBroken = errors.New("broken")

func checkBlocks(t *testing.T, data []byte, max, size, mix int, wrap func(io.Reader) io.Reader) {
	t.Helper()
	open := func() *Reader {
		r, err := NewReader(wrap(bytes.NewReader(data)), "x", ReaderConfig{MaxLine: max})
		if err != nil {
			return nil // a broken gzip or zstd header: no lines either way
		}
		return r
	}
	r := open()
	if r == nil {
		return
	}
	want, wantCut, wantErr := readLines(r)
	wantLine := r.Line()
	r = open()
	got, gotCut, gotErr := readBlocks(t, r, size, mix)
	if !equal(got, want) || !equalBool(gotCut, wantCut) {
		t.Fatalf("max %d size %d mix %d:\nReadBlock %q %v\nNext      %q %v", max, size, mix, got, gotCut, want, wantCut)
	}
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("ReadBlock ends with %v, Next with %v", gotErr, wantErr)
	}
	if r.Line() != wantLine {
		t.Fatalf("Line %d, Next's %d", r.Line(), wantLine)
	}
}

// FuzzReadBlock holds ReadBlock and SplitLine to Next: the same lines, cut
// the same way, numbered the same, whatever the line lengths, the buffer
// size, short reads, a failing source, or calls to Next in between.
func FuzzReadBlock(f *testing.F) {
	f.Add([]byte("a\nbb\n\nccc\n"), uint8(4), uint8(0), uint8(0))
	f.Add([]byte("a\r\nb\r\nlast"), uint8(1), uint8(3), uint8(1))
	f.Add([]byte(strings.Repeat("x", 50)+"\r\nshort\n"+strings.Repeat("y", 30)), uint8(9), uint8(2), uint8(2))
	f.Add([]byte("0123456789\r\n01234567\r\n"), uint8(9), uint8(0), uint8(3))
	f.Add([]byte(strings.Repeat("line\n", 40)), uint8(5), uint8(30), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, max, extra, mode uint8) {
		if len(data) > maxFuzzLine {
			return
		}
		m := int(max%32) + 1
		size := m + 2 + int(extra)
		wraps := []func(io.Reader) io.Reader{
			func(r io.Reader) io.Reader { return r },
			iotest.OneByteReader,
			iotest.HalfReader,
			func(r io.Reader) io.Reader { return io.MultiReader(r, iotest.ErrReader(errBroken)) },
		}
		checkBlocks(t, data, m, size, int(mode>>2)%4, wraps[mode%4])
	})
}

func TestReadBlock(t *testing.T) {
	long := strings.Repeat("x", 100)
	huge := strings.Repeat("y", 1<<20)
	for _, data := range []string{
		"", "a", "a\n", "\n\n", "a\nbb\n\nccc\n", "a\r\nb\r", long + "\n" + long, huge + "\nz\n" + huge[:DefaultMaxLine] + "\n" + huge,
	} {
		for _, max := range []int{0, 10} {
			for _, size := range []int{12, 50, 1000, 3 << 20} {
				if max == 0 && size < DefaultMaxLine+2 {
					continue
				}
				for mix := range 3 {
					checkBlocks(t, []byte(data), max, size, mix, func(r io.Reader) io.Reader { return r })
				}
			}
		}
	}
	r, err := NewReader(strings.NewReader("a\n"), "small", ReaderConfig{MaxLine: 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.ReadBlock(make([]byte, 11)); err == nil || !strings.Contains(err.Error(), "small") {
		t.Errorf("ReadBlock into MaxLine+1 bytes = %v, want an error", err)
	}
}

func TestReadBlockAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("-race allocates")
	}
	data := []byte(strings.Repeat("203.0.113.7 - - [10/Oct/2023:13:55:36 +0000] \"GET / HTTP/1.1\" 200 5 \"-\" \"curl/8\"\n", 20000))
	r, err := NewReader(bytes.NewReader(data), "x", ReaderConfig{})
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 256<<10)
	allocs := testing.AllocsPerRun(5, func() {
		if _, _, err := r.ReadBlock(dst); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("ReadBlock: %v allocs per call, want 0", allocs)
	}
}

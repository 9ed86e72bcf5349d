package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// quirkLog writes n combined lines, each ended by end, with every
// badEvery-th line (0: none) cut short, and returns the file's path.
func quirkLog(t *testing.T, n, badEvery int, end string) string {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if badEvery > 0 && i%badEvery == 0 {
			fmt.Fprintf(&b, "203.0.113.%d - - [10/Oct/2024:13:55:%02d +0000] \"GET /page/%d HTTP/1.1\" 200\n", i%200+1, i%60, i)
			continue
		}
		fmt.Fprintf(&b, "203.0.113.%d - - [10/Oct/2024:13:55:%02d +0000] \"GET /page/%d HTTP/1.1\" 200 512 \"-\" \"Mozilla/5.0 (X11; Linux x86_64) Firefox/125.0\"%s\n", i%200+1, i%60, i, end)
	}
	path := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(path, []byte(strings.TrimSuffix(b.String(), "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReplayTrailingBlanks: a log whose every line ends in a space after the
// user agent's closing quote (or a space and a CR), without a final newline,
// replays with no line malformed and no warning.
func TestReplayTrailingBlanks(t *testing.T) {
	for _, end := range []string{" ", " \r", "\r", "\t"} {
		var out, errb bytes.Buffer
		if rc := runReplay([]string{"--progress", "never", quirkLog(t, 100, 0, end)}, &out, &errb); rc != 0 {
			t.Fatalf("end %q: rc %d: %s", end, rc, errb.String())
		}
		if !strings.Contains(errb.String(), "100 lines (0 malformed)") || strings.Contains(errb.String(), "warning") {
			t.Errorf("end %q: %s", end, errb.String())
		}
	}
}

// TestReplayMalformedWarning: when more than a few percent of the lines are
// malformed, replay says so and shows the first with its file and line.
func TestReplayMalformedWarning(t *testing.T) {
	path := quirkLog(t, 100, 10, "")
	var out, errb bytes.Buffer
	if rc := runReplay([]string{"--progress", "never", path}, &out, &errb); rc != 0 {
		t.Fatalf("rc %d: %s", rc, errb.String())
	}
	for _, want := range []string{"10 of 100 lines (10.0%) are malformed", "first malformed line: " + path + ":10:"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
	// One bad line in a hundred is a rotation's cut, not worth a warning.
	errb.Reset()
	if rc := runReplay([]string{"--progress", "never", quirkLog(t, 100, 100, "")}, &out, &errb); rc != 0 || strings.Contains(errb.String(), "warning") {
		t.Errorf("rc %d: %s", rc, errb.String())
	}
}

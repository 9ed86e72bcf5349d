package tail

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/guardd/guardd/testwait"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		max    int
		want   []string // "!" suffix marks a cut line
		off    int64
	}{
		{"whole lines", []string{"a\nbb\n"}, 10, []string{"a", "bb"}, 5},
		{"line across reads", []string{"ab", "c\nd", "e\n"}, 10, []string{"abc", "de"}, 7},
		{"unfinished line waits", []string{"a\nbc"}, 10, []string{"a"}, 2},
		{"empty lines", []string{"\n\nx\n"}, 10, []string{"", "", "x"}, 4},
		{"long line cut in one read", []string{"0123456789abc\nz\n"}, 4, []string{"0123!", "z"}, 16},
		{"long line cut across reads", []string{"01", "2345", "678\nz\n"}, 4, []string{"0123!", "z"}, 12},
		{"long line exactly max", []string{"0123\n"}, 4, []string{"0123"}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl, _ := New(Config{Paths: []string{"x"}, MaxLineBytes: tt.max})
			f := &file{}
			for _, c := range tt.chunks {
				tl.split(f, []byte(c))
			}
			var got []string
			for _, l := range tl.lines {
				s := string(l.Data)
				if l.Cut {
					s += "!"
				}
				got = append(got, s)
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("lines = %q, want %q", got, tt.want)
			}
			if f.off != tt.off {
				t.Errorf("offset = %d, want %d", f.off, tt.off)
			}
		})
	}
}

// collector gathers numbered lines ("%09d") from a Tailer.
type collector struct {
	mu        sync.Mutex
	count     map[int]int
	fragments int // shorter lines: a write cut by logrotate's copy
}

func (c *collector) handle(lines []Line, _ Position) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range lines {
		n, err := strconv.Atoi(string(l.Data))
		if err != nil {
			return fmt.Errorf("bad line %q", l.Data)
		}
		if len(l.Data) != 9 {
			// The unfinished last line of a copytruncate copy, delivered
			// because a copy does not grow: "00001234" of 000012345 is not
			// line 1234.
			c.fragments++
			continue
		}
		c.count[n]++
	}
	return nil
}

// hasAll reports whether every line of want was read.
func (c *collector) hasAll(want map[int]bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for n := range want {
		if c.count[n] == 0 {
			return false
		}
	}
	return true
}

// writer appends numbered lines like nginx: O_APPEND, one write per line.
type writer struct {
	path string
	f    *os.File
	next int
}

func (w *writer) open(t *testing.T) {
	f, err := os.OpenFile(w.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	w.f = f
}

func (w *writer) write(t *testing.T, n int) {
	for range n {
		if _, err := fmt.Fprintf(w.f, "%09d\n", w.next); err != nil {
			t.Fatal(err)
		}
		w.next++
	}
}

// runTailer runs a Tailer on c; stop waits until done holds (polled, with a
// deadline: the lines a test expects have been read), then stops it.
func runTailer(t *testing.T, cfg Config, c *collector) (stop func(done func() bool) Stats) {
	tl, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() { result <- tl.Run(ctx, c.handle) }()
	return func(done func() bool) Stats {
		testwait.Until(t, 20*time.Second, "the expected lines", done)
		cancel()
		if err := <-result; err != nil {
			t.Fatal(err)
		}
		return tl.Stats()
	}
}

// TestRotateRename writes numbered lines at full speed through several
// rename-and-create rotations, with the writer going on in the old file for a
// while after each rename, as nginx does until USR1. Every line must be read
// exactly once.
func TestRotateRename(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	w := &writer{path: path}
	w.open(t)
	c := &collector{count: map[int]int{}}
	stop := runTailer(t, Config{Paths: []string{filepath.Join(dir, "*.log")}, FromStart: true, PollInterval: 5 * time.Millisecond, RotateGrace: 300 * time.Millisecond}, c)
	const rotations, per = 5, 40000
	for r := range rotations {
		w.write(t, per)
		if err := os.Rename(path, fmt.Sprintf("%s.%d", path, r+1)); err != nil {
			t.Fatal(err)
		}
		w.write(t, 3000) // still in the renamed file
		// The thing under test: the writer goes on in the renamed file
		// for a varying while, before and after the tailer notices.
		time.Sleep(time.Duration(r) * 10 * time.Millisecond)
		w.write(t, 1000)
		w.f.Close()
		w.open(t) // nginx reopens on USR1
	}
	w.write(t, per)
	w.f.Close()
	st := stop(func() bool { return c.has(0, w.next) })
	check(t, c, w.next, nil)
	if st.Rotations != rotations {
		t.Errorf("rotations = %d, want %d", st.Rotations, rotations)
	}
}

// TestRotateCopyTruncate copies the file aside and truncates it while the
// writer keeps writing. Lines written between the copy and the truncate are
// on no disk and lost by logrotate itself; every line that is on disk must be
// read exactly once.
func TestRotateCopyTruncate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	w := &writer{path: path}
	w.open(t)
	c := &collector{count: map[int]int{}}
	stop := runTailer(t, Config{Paths: []string{path}, FromStart: true, PollInterval: 5 * time.Millisecond, RotateGrace: 100 * time.Millisecond}, c)
	var wg sync.WaitGroup
	const rotations = 5
	rotated := make(chan struct{})
	wg.Add(1)
	go func() { // logrotate
		defer wg.Done()
		defer close(rotated)
		for r := range rotations {
			time.Sleep(60 * time.Millisecond) // logrotate's pace: the writer writes meanwhile
			copyFile(t, path, fmt.Sprintf("%s.%d", path, r+1))
			if err := os.Truncate(path, 0); err != nil {
				t.Error(err)
				return
			}
			// Each truncation is to be seen on its own: wait until the
			// tailer has read the file's new first line, which no copy
			// holds yet, rather than guess it looks within 60 ms. (Two
			// truncations seen at once are TestCopyTruncateBacklog's.)
			if !waitRead(c, path) {
				t.Errorf("rotation %d: the tailer never read the truncated file's first line", r+1)
				return
			}
		}
	}()
	for done := false; !done; {
		w.write(t, 2000)
		select {
		case <-rotated:
			done = true
		default:
		}
	}
	w.write(t, 20000)
	w.f.Close()
	wg.Wait()
	onDisk := linesOnDisk(t, dir)
	st := stop(func() bool { return c.hasAll(onDisk) })
	check(t, c, w.next, onDisk)
	t.Logf("written %d, on disk %d (logrotate's copy-truncate window lost %d), truncations %d, recovered from copies %d",
		w.next, len(onDisk), w.next-len(onDisk), st.Truncations, st.Recovered)
	if st.Truncations != rotations {
		t.Errorf("truncations = %d, want %d", st.Truncations, rotations)
	}
}

// waitRead polls, with a deadline, until the writer has put a whole line at
// the start of path and c has read it.
func waitRead(c *collector, path string) bool {
	first, bad := -1, false
	ok := testwait.For(20*time.Second, func() bool {
		if first < 0 {
			b := make([]byte, 10)
			f, err := os.Open(path)
			if err != nil {
				return false
			}
			n, _ := io.ReadFull(f, b)
			f.Close()
			if n < 10 || b[9] != '\n' {
				return false
			}
			if first, err = strconv.Atoi(string(b[:9])); err != nil {
				bad = true // not a line the writer wrote: fail now
				return true
			}
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.count[first] > 0
	})
	return ok && !bad
}

func copyFile(t *testing.T, from, to string) {
	src, err := os.Open(from)
	if err != nil {
		t.Error(err)
		return
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Error(err)
		return
	}
	defer dst.Close()
	io.Copy(dst, src)
}

func linesOnDisk(t *testing.T, dir string) map[int]bool {
	out := map[int]bool{}
	files, _ := filepath.Glob(filepath.Join(dir, "access.log*"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, l := range strings.Split(string(b), "\n") {
			if n, err := strconv.Atoi(l); err == nil && len(l) == 9 {
				out[n] = true
			}
		}
	}
	return out
}

// check asserts every expected line was read exactly once, and no line
// twice. expected nil means all of 0..written-1. A line that is not expected
// (written between logrotate's copy and its truncate) may be read once: the
// tailer saw it before the truncate.
func check(t *testing.T, c *collector, written int, expected map[int]bool) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	lost, dup, saved := 0, 0, 0
	for n := range written {
		want := expected == nil || expected[n]
		got := c.count[n]
		switch {
		case got > 1:
			dup++
		case want && got == 0:
			lost++
		case !want && got == 1:
			saved++
		}
	}
	if lost+dup > 0 {
		t.Errorf("of %d lines: %d lost, %d read twice", written, lost, dup)
	}
	if saved > 0 {
		t.Logf("%d lines missing from logrotate's copy were read before the truncate", saved)
	}
	if len(c.count) > written {
		t.Errorf("read %d distinct lines, only %d were written", len(c.count), written)
	}
}

// TestCrashRestart kills a tailing process with SIGKILL three times while
// lines are written through rename rotations, and restarts it from what it
// committed. The child commits each batch with its position in its output
// (lines, then a checkpoint line); after a restart it drops anything after
// its last checkpoint. Every line must end up in the output exactly once.
func TestCrashRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	out := filepath.Join(dir, "out")
	w := &writer{path: path}
	w.open(t)
	start := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$")
		cmd.Env = append(os.Environ(), "GUARDD_TAIL_CHILD="+path+"|"+out)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	child := start()
	for r := range 6 {
		w.write(t, 30000)
		if r%2 == 1 {
			os.Rename(path, fmt.Sprintf("%s.%d", path, r))
			w.write(t, 2000)
			w.f.Close()
			w.open(t)
		}
		w.write(t, 10000)
		if r%2 == 0 { // crash
			child.Process.Signal(syscall.SIGKILL)
			child.Wait()
			child = start()
		}
	}
	w.f.Close()
	// Let the last child catch up, then stop it cleanly.
	testwait.For(30*time.Second, func() bool { return committed(t, out) >= w.next })
	child.Process.Signal(syscall.SIGKILL)
	child.Wait()
	c := &collector{count: map[int]int{}}
	for _, l := range committedLines(t, out) {
		n, err := strconv.Atoi(l)
		if err != nil {
			t.Fatalf("bad line %q", l)
		}
		c.count[n]++
	}
	check(t, c, w.next, nil)
}

const ckpt = "#CKPT "

// committedLines returns the lines before the last checkpoint record.
func committedLines(t *testing.T, out string) []string {
	b, err := os.ReadFile(out)
	if err != nil {
		return nil
	}
	i := bytes.LastIndex(b, []byte("\n"+ckpt))
	if i < 0 {
		return nil
	}
	var lines []string
	for _, l := range strings.Split(string(b[:i]), "\n") {
		if l != "" && !strings.HasPrefix(l, ckpt) {
			lines = append(lines, l)
		}
	}
	return lines
}

func committed(t *testing.T, out string) int { return len(committedLines(t, out)) }

// TestCrashChild is the process TestCrashRestart kills.
func TestCrashChild(t *testing.T) {
	env := os.Getenv("GUARDD_TAIL_CHILD")
	if env == "" {
		t.Skip("run by TestCrashRestart")
	}
	path, out, _ := strings.Cut(env, "|")
	start, err := recoverOutput(out)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	var logger *slog.Logger
	if os.Getenv("GUARDD_TAIL_DEBUG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		logger.Info("child start", "position", start)
	}
	tl, err := New(Config{Paths: []string{path}, Start: start, FromStart: true, PollInterval: 5 * time.Millisecond, RotateGrace: 500 * time.Millisecond, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	var buf []byte
	tl.Run(context.Background(), func(lines []Line, p Position) error {
		buf = buf[:0]
		for _, l := range lines {
			buf = append(append(buf, l.Data...), '\n')
		}
		pj, _ := json.Marshal(p)
		buf = append(append(append(buf, ckpt...), pj...), '\n')
		_, err := f.Write(buf)
		return err
	})
}

// recoverOutput cuts the output after its last complete checkpoint and
// returns that checkpoint.
func recoverOutput(out string) (*Position, error) {
	f, err := os.OpenFile(out, os.O_RDWR, 0)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var p *Position
	var end, off int64
	r := bufio.NewReader(f)
	for {
		l, err := r.ReadBytes('\n')
		if err != nil {
			break // an unfinished last record is dropped
		}
		off += int64(len(l))
		if bytes.HasPrefix(l, []byte(ckpt)) {
			var np Position
			if json.Unmarshal(l[len(ckpt):], &np) == nil {
				p, end = &np, off
			}
		}
	}
	return p, f.Truncate(end)
}

// TestStartAtEnd: a first start skips what is already in the file, and a
// file created later is read from its start.
func TestStartAtEnd(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "a.log")
	os.WriteFile(old, []byte("000000001\n000000002\n"), 0o644)
	c := &collector{count: map[int]int{}}
	stop := runTailer(t, Config{Paths: []string{filepath.Join(dir, "*.log")}, PollInterval: 5 * time.Millisecond, RotateGrace: 50 * time.Millisecond}, c)
	f, _ := os.OpenFile(old, os.O_APPEND|os.O_WRONLY, 0)
	// The tailer follows a.log once a line appended to it is read: markers
	// (100, 101, ...) until one arrives.
	marker := 100
	testwait.Until(t, 20*time.Second, "the tailer to follow a.log", func() bool {
		if c.hasAny(100, marker) {
			return true
		}
		fmt.Fprintf(f, "%09d\n", marker)
		marker++
		return false
	})
	f.WriteString("000000003\n")
	f.Close()
	os.WriteFile(filepath.Join(dir, "b.log"), []byte("000000004\n"), 0o644)
	stop(func() bool { return c.has(3, 5) })
	if c.count[1] != 0 || c.count[2] != 0 || c.count[3] != 1 || c.count[4] != 1 {
		t.Errorf("counts = %v, want only 3 and 4 once", c.count)
	}
}

// TestCheckpointNotAppliedToOtherFile: a checkpoint whose file was replaced
// by a different one at the same path (another inode or another head) is not
// applied to it.
func TestCheckpointNotAppliedToOtherFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.log")
	os.WriteFile(path, []byte("000000001\n000000002\n"), 0o644)
	st, _ := os.Stat(path)
	dev, ino := devIno(st)
	f, _ := os.Open(path)
	head, n := fingerprint(f, headBytes)
	f.Close()
	p := &Position{Files: []FilePos{{Path: path, Dev: dev, Ino: ino, Offset: 10, Head: head, HeadLen: n}}}
	// Replace the file in place with other content: same inode, other head.
	os.WriteFile(path, []byte("000000007\n000000008\n000000009\n"), 0o644)
	c := &collector{count: map[int]int{}}
	stop := runTailer(t, Config{Paths: []string{path}, Start: p, PollInterval: 5 * time.Millisecond, RotateGrace: 50 * time.Millisecond}, c)
	stats := stop(func() bool { return c.has(7, 10) })
	if c.count[7] != 1 || c.count[8] != 1 || c.count[9] != 1 {
		t.Errorf("counts = %v, want 7, 8, 9 once (new file from its start)", c.count)
	}
	if stats.LostFiles != 1 {
		t.Errorf("LostFiles = %d, want 1", stats.LostFiles)
	}
}

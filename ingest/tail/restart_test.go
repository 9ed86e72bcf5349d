package tail

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/guardd/guardd/testwait"
)

// follower runs a Tailer and records the lines and the last position, so a
// test can wait for a condition and restart from where it stopped.
type follower struct {
	c      *collector
	mu     sync.Mutex
	pos    Position
	cancel context.CancelFunc
	done   chan error
	tl     *Tailer
}

func follow(t *testing.T, cfg Config, c *collector) *follower {
	t.Helper()
	tl, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &follower{c: c, cancel: cancel, done: make(chan error, 1), tl: tl}
	go func() {
		f.done <- tl.Run(ctx, func(lines []Line, p Position) error {
			if err := c.handle(lines, p); err != nil {
				return err
			}
			f.mu.Lock()
			f.pos = p
			f.mu.Unlock()
			return nil
		})
	}()
	return f
}

func (f *follower) stop(t *testing.T) Position {
	t.Helper()
	f.cancel()
	if err := <-f.done; err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pos
}

func (c *collector) has(from, to int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := from; i < to; i++ {
		if c.count[i] == 0 {
			return false
		}
	}
	return true
}

// hasAny reports whether any line in [from, to) was read.
func (c *collector) hasAny(from, to int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := from; i < to; i++ {
		if c.count[i] > 0 {
			return true
		}
	}
	return false
}

// TestCopyTruncateWhileStopped: lines written after the checkpoint, then a
// copytruncate while the tailer is down, are read from the copy on restart,
// and the truncated file from its start; nothing lost, nothing twice. The
// copy ends with an unfinished line, which is delivered (the copy will not
// grow).
func TestCopyTruncateWhileStopped(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	w := &writer{path: path}
	w.open(t)
	defer func() { w.f.Close() }()
	w.write(t, 100)
	c := &collector{count: map[int]int{}}
	cfg := Config{Paths: []string{path}, FromStart: true, PollInterval: 5 * time.Millisecond, RotateGrace: 50 * time.Millisecond}
	f := follow(t, cfg, c)
	testwait.Until(t, 20*time.Second, "the first 100 lines", func() bool { return c.has(0, 100) })
	pos := f.stop(t)

	// While stopped: 50 more lines, the last one unfinished in the copy, then
	// logrotate's copytruncate, then 10 lines in the emptied file.
	w.write(t, 49)
	w.f.WriteString("000000149")
	copyFile(t, path, path+".1")
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	w.next = 150
	w.write(t, 10)

	cfg.Start = &pos
	f = follow(t, cfg, c)
	testwait.Until(t, 20*time.Second, "the lines written while stopped", func() bool { return c.has(0, 160) })
	f.stop(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range 160 {
		if c.count[i] != 1 {
			t.Errorf("line %d read %d times", i, c.count[i])
		}
	}
	if len(c.count) != 160 {
		t.Errorf("%d distinct lines, want 160", len(c.count))
	}
	if st := f.tl.Stats(); st.LostFiles != 0 || st.Truncations != 1 {
		t.Errorf("stats %+v: want no lost file and one truncation", st)
	}
}

// TestLineNumbers: each line comes with its 1-based number and byte offset
// in its file, across a first start at the end of a file, a restart from the
// checkpoint and a truncation, so a bad line can be named file:line. Cycles
// are driven by hand: no goroutine, no waiting.
func TestLineNumbers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	if err := os.WriteFile(path, []byte("old-1\nold-2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	appendTo := func(s string) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string][2]int64{}
	var pos Position
	handle := func(lines []Line, p Position) error {
		for _, l := range lines {
			got[string(l.Data)] = [2]int64{l.Num, l.Offset}
		}
		pos = p
		return nil
	}
	cfg := Config{Paths: []string{path}}
	tl, err := New(cfg) // a first start: from the end
	if err != nil {
		t.Fatal(err)
	}
	defer tl.closeAll()
	now := time.Now()
	if err := tl.cycle(now, handle); err != nil {
		t.Fatal(err)
	}
	tl.first = false
	appendTo("new-3\nnew-4\n")
	if err := tl.cycle(now, handle); err != nil {
		t.Fatal(err)
	}
	if len(pos.Files) != 1 || pos.Files[0].Line != 4 || pos.Files[0].Offset != 24 {
		t.Fatalf("position %+v: want line 4 at offset 24", pos)
	}
	// Restart from the checkpoint.
	cfg.Start = &pos
	tl2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tl2.closeAll()
	tl2.restore(pos)
	tl2.first = false
	appendTo("new-5\n")
	if err := tl2.cycle(now, handle); err != nil {
		t.Fatal(err)
	}
	// Truncated in place (no copy found): numbering starts again.
	if err := os.WriteFile(path, []byte("t-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := tl2.cycle(now, handle); err != nil {
		t.Fatal(err)
	}
	for k, w := range map[string][2]int64{"new-3": {3, 12}, "new-4": {4, 18}, "new-5": {5, 24}, "t-1": {1, 0}} {
		if g, ok := got[k]; !ok || g != w {
			t.Errorf("%s: line %d offset %d (read %v), want line %d offset %d", k, g[0], g[1], ok, w[0], w[1])
		}
	}
	if _, ok := got["old-1"]; ok {
		t.Error("a first start read the existing lines")
	}
	// A checkpoint from before line numbers: unknown, not wrong.
	old := pos
	old.Files = slices.Clone(pos.Files)
	old.Files[0].Line = 0
	cfg.Start = &old
	tl3, _ := New(cfg)
	defer tl3.closeAll()
	tl3.restore(old)
	tl3.first = false
	appendTo("t-2\n")
	if err := tl3.cycle(now, handle); err != nil {
		t.Fatal(err)
	}
	if g := got["t-2"]; g != [2]int64{0, 4} {
		t.Errorf("t-2 after an old checkpoint: line %d offset %d, want 0 (unknown) at 4", g[0], g[1])
	}
}

// TestCopyTruncateBacklog: a copytruncate found with more unread in the copy
// than one batch holds, and a second copytruncate before the tailer looked
// again: every line is read once, in order. Cycles are driven by hand.
func TestCopyTruncateBacklog(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	w := &writer{path: path}
	w.open(t)
	defer func() { w.f.Close() }()
	c := &collector{count: map[int]int{}}
	var order []int
	handle := func(lines []Line, p Position) error {
		for _, l := range lines {
			n, _ := strconv.Atoi(string(l.Data))
			order = append(order, n)
		}
		return c.handle(lines, p)
	}
	tl, err := New(Config{Paths: []string{path}, FromStart: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tl.closeAll()
	now := time.Now()
	drain := func() {
		for range 100 {
			if err := tl.cycle(now, handle); err != errMore {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
		}
		t.Fatal("more than 100 full batches")
	}
	w.write(t, 100)
	drain()
	w.write(t, 3*maxBatchLines) // unread when logrotate copies
	copyFile(t, path, path+".1")
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	w.write(t, 500) // only ever in the second copy
	// Far enough apart that the copies' modification times order them.
	later := time.Now().Add(time.Second)
	copyFile(t, path, path+".2")
	os.Chtimes(path+".2", later, later)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	w.write(t, 7)
	drain()
	for i := range w.next {
		if c.count[i] != 1 {
			t.Fatalf("line %d read %d times (of %d written)", i, c.count[i], w.next)
		}
	}
	if !slices.IsSorted(order) {
		t.Error("lines out of order")
	}
}

package tail

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"syscall"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/fsnotify/fsnotify"
)

// headBytes is how much of a file's start identifies it.
const headBytes = 256

// Config configures a Tailer.
type Config struct {
	// Paths are files or globs (filepath.Match syntax) to follow.
	Paths []string
	// Start is the position to resume from, as handed to the consumer with an
	// earlier batch. Files in it are resumed where they were; files that match
	// Paths but are not in it are read from their start when Start is set
	// (they appeared while we were down), or from their end on a first start.
	Start *Position
	// FromStart reads files that Start does not know from their beginning even
	// on a first start.
	FromStart bool
	// MaxLineBytes caps a line; the rest of it is skipped. 0 means 64 KiB.
	MaxLineBytes int
	// PollInterval is how often files are checked when no change notification
	// arrives; 0 means 250ms. Notifications (inotify) wake the Tailer at once.
	PollInterval time.Duration
	// RotateGrace is how long a renamed file must stay quiet before it is
	// closed; 0 means 5s.
	RotateGrace time.Duration
	Logger      *slog.Logger
}

// Line is one line without its newline. Data is valid only during the
// handler call.
type Line struct {
	Path string // the path the file was found at (its name before rotation)
	Data []byte
	Cut  bool // longer than MaxLineBytes; Data holds its start
	// Num is the line's 1-based number in its file, for messages about
	// it ("access.log:1234"); 0 when unknown: resumed from a checkpoint
	// that did not record it, or the file was over maxCountBytes when
	// followed from its end.
	Num int64
	// Offset is the byte offset of the line's start in its file.
	Offset int64
}

// FilePos is where reading of one file stands.
type FilePos struct {
	Path    string `json:"path"`
	Dev     uint64 `json:"dev"`
	Ino     uint64 `json:"ino"`
	Offset  int64  `json:"offset"`
	Line    int64  `json:"line,omitempty"` // lines before Offset, when known (0 at offset 0)
	Head    uint64 `json:"head"`           // xxhash of the first HeadLen bytes
	HeadLen int    `json:"head_len"`       // up to 256
	Rotated bool   `json:"rotated,omitempty"`
}

// Position is where reading of every followed file stands.
type Position struct {
	Files []FilePos `json:"files"`
}

// Stats are counters since New.
type Stats struct {
	Lines, Bytes, CutLines, Rotations, Truncations, Recovered int64
	LostFiles                                                 int64 // files in Start that could not be found again
}

// Tailer follows files. Create it with New and call Run once.
type Tailer struct {
	cfg   Config
	log   *slog.Logger
	files []*file // current files by path, then rotated ones being drained
	stats Stats
	first bool
	buf   []byte
	lines []Line
	arena []byte
}

type file struct {
	path     string
	f        *os.File
	dev, ino uint64
	off      int64 // offset after the last delivered newline
	line     int64 // lines before off; -1 when unknown
	head     uint64
	headLen  int
	partial  []byte // bytes after off read so far without a newline
	skipping bool   // inside an over-long line
	rotated  bool
	copy     bool // a copytruncate copy: it will not grow, an unfinished last line is delivered
	lastData time.Time
}

// New validates cfg. It opens nothing.
func New(cfg Config) (*Tailer, error) {
	if len(cfg.Paths) == 0 {
		return nil, errors.New("tail: no paths")
	}
	for _, p := range cfg.Paths {
		if _, err := filepath.Match(p, ""); err != nil {
			return nil, fmt.Errorf("tail: path %q: %w", p, err)
		}
	}
	if cfg.MaxLineBytes <= 0 {
		cfg.MaxLineBytes = 64 << 10
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 250 * time.Millisecond
	}
	if cfg.RotateGrace <= 0 {
		cfg.RotateGrace = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Tailer{cfg: cfg, log: cfg.Logger, first: cfg.Start == nil, buf: make([]byte, 256<<10)}, nil
}

// Stats returns the counters. Call it from the handler or after Run.
func (t *Tailer) Stats() Stats { return t.stats }

// Run follows the files until ctx ends, calling handle with each batch of
// complete lines and the position after them. handle runs on Run's goroutine;
// if it returns an error, Run stops and returns it. Run returns nil when ctx
// ends.
func (t *Tailer) Run(ctx context.Context, handle func([]Line, Position) error) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.log.Warn("tail: no change notifications, polling only", "err", err)
		w = nil
	} else {
		defer w.Close()
		seen := map[string]bool{}
		for _, p := range t.cfg.Paths {
			d := filepath.Dir(p)
			if !seen[d] {
				seen[d] = true
				if err := w.Add(d); err != nil {
					t.log.Warn("tail: cannot watch directory, polling it", "dir", d, "err", err)
				}
			}
		}
	}
	if t.cfg.Start != nil {
		t.restore(*t.cfg.Start)
	}
	defer t.closeAll()
	tick := time.NewTicker(t.cfg.PollInterval)
	defer tick.Stop()
	var events chan fsnotify.Event
	var errs chan error
	if w != nil {
		events, errs = w.Events, w.Errors
	}
	for {
		err := t.cycle(time.Now(), handle)
		t.first = false
		if err == errMore {
			if ctx.Err() != nil {
				return nil
			}
			continue
		}
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-events:
			// Coalesce a burst of notifications into one cycle.
		drain:
			for {
				select {
				case <-events:
				default:
					break drain
				}
			}
		case err := <-errs:
			t.log.Warn("tail: notification error", "err", err)
		}
	}
}

func (t *Tailer) closeAll() {
	for _, f := range t.files {
		f.f.Close()
	}
	t.files = nil
}

// cycle looks for new, rotated and truncated files, reads what is new and
// hands it over.
func (t *Tailer) cycle(now time.Time, handle func([]Line, Position) error) error {
	t.lines, t.arena = t.lines[:0], t.arena[:0]
	t.discover(now) // may recover lines from a copytruncate copy
	// Rotated files first: their lines were written before the new file's.
	for _, f := range t.files {
		if f.rotated {
			t.read(f, now)
		}
	}
	for _, f := range t.files {
		if !f.rotated {
			t.read(f, now)
		}
	}
	// Close rotated files that have been quiet long enough.
	t.files = slices.DeleteFunc(t.files, func(f *file) bool {
		if f.rotated && now.Sub(f.lastData) >= t.cfg.RotateGrace {
			f.f.Close()
			return true
		}
		return false
	})
	if len(t.lines) == 0 {
		return nil
	}
	t.stats.Lines += int64(len(t.lines))
	for _, l := range t.lines {
		t.stats.Bytes += int64(len(l.Data)) + 1
	}
	more := t.full()
	if err := handle(t.lines, t.position()); err != nil {
		return err
	}
	if more {
		return errMore
	}
	return nil
}

// errMore tells Run a batch was full and more is waiting.
var errMore = errors.New("tail: more")

func (t *Tailer) position() Position {
	p := Position{Files: make([]FilePos, 0, len(t.files))}
	for _, f := range t.files {
		p.Files = append(p.Files, FilePos{Path: f.path, Dev: f.dev, Ino: f.ino, Offset: f.off, Line: max(f.line, 0), Head: f.head, HeadLen: f.headLen, Rotated: f.rotated})
	}
	return p
}

func (t *Tailer) current(path string) *file {
	for _, f := range t.files {
		if !f.rotated && f.path == path {
			return f
		}
	}
	return nil
}

// discover expands the globs and notices new files, renames and truncations.
func (t *Tailer) discover(now time.Time) {
	var paths []string
	for _, p := range t.cfg.Paths {
		m, _ := filepath.Glob(p)
		paths = append(paths, m...)
	}
	sort.Strings(paths)
	paths = slices.Compact(paths)
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		dev, ino := devIno(st)
		cur := t.current(p)
		if cur != nil && cur.dev == dev && cur.ino == ino {
			t.checkTruncated(cur, st.Size(), now)
			continue
		}
		if cur != nil { // renamed away and a new file created at p
			cur.rotated = true
			cur.lastData = now
			t.stats.Rotations++
			t.log.Info("tail: file rotated (rename)", "path", p)
		}
		if t.adopt(p, dev, ino) {
			continue
		}
		t.open(p, now, cur != nil || !t.first || t.cfg.FromStart)
	}
}

// adopt makes a rotated file that reappears at a followed path (or a file
// restored from a position) current again, instead of opening it twice.
func (t *Tailer) adopt(path string, dev, ino uint64) bool {
	for _, f := range t.files {
		if f.dev == dev && f.ino == ino {
			if f.rotated && f.path == path {
				f.rotated = false
			}
			return true
		}
	}
	return false
}

func (t *Tailer) open(path string, now time.Time, fromStart bool) {
	fh, err := os.Open(path)
	if err != nil {
		t.log.Warn("tail: open", "path", path, "err", err)
		return
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return
	}
	dev, ino := devIno(st)
	f := &file{path: path, f: fh, dev: dev, ino: ino, lastData: now}
	f.head, f.headLen = fingerprint(fh, headBytes)
	if !fromStart {
		f.off = st.Size()
		f.line = countLines(fh, f.off)
	}
	t.files = append(t.files, f)
	t.log.Debug("tail: following", "path", path, "offset", f.off)
}

// checkTruncated handles copytruncate: the file is shorter than what we read,
// or its first bytes changed.
func (t *Tailer) checkTruncated(f *file, size int64, now time.Time) {
	truncated := size < f.off+int64(len(f.partial))
	if !truncated && f.headLen > 0 {
		h, _ := fingerprint(f.f, f.headLen)
		truncated = h != f.head
	}
	if !truncated {
		if f.headLen < headBytes && size > int64(f.headLen) {
			f.head, f.headLen = fingerprint(f.f, headBytes)
		}
		return
	}
	t.stats.Truncations++
	t.log.Info("tail: file truncated (copytruncate)", "path", f.path, "offset", f.off)
	head, headLen := fingerprint(f.f, headBytes)
	if cp, st := t.findCopy(f); cp != nil {
		// Follow the copy from where we were, as a rotated file read
		// before the file itself (over as many batches as it takes), then
		// go on in place. The copy does not grow: its unfinished last line
		// is delivered at its end.
		t.followCopy(&file{path: f.path, f: cp, off: f.off, line: f.line, partial: f.partial, skipping: f.skipping,
			head: f.head, headLen: f.headLen}, st, now)
		// Copies made by later copytruncates before we looked hold lines
		// the file had only between two of them: read them whole, oldest
		// first.
		for _, later := range t.laterCopies(f.path, st, head, headLen) {
			h, n := fingerprint(later.fh, headBytes)
			t.followCopy(&file{path: f.path, f: later.fh, head: h, headLen: n}, later.st, now)
		}
	}
	f.off, f.line, f.partial, f.skipping = 0, 0, nil, false
	f.head, f.headLen = head, headLen
}

// followCopy adds a copytruncate copy to the files read, as a rotated file.
func (t *Tailer) followCopy(c *file, st os.FileInfo, now time.Time) {
	c.dev, c.ino = devIno(st)
	c.rotated, c.copy, c.lastData = true, true, now
	t.files = append(t.files, c)
}

type sibling struct {
	fh *os.File
	st os.FileInfo
}

// laterCopies returns the siblings of path modified after the copy first
// (by inode), oldest first, that are neither first nor hold the file's
// current head, nor compressed. Only a copytruncate writes such a file.
func (t *Tailer) laterCopies(path string, first os.FileInfo, head uint64, headLen int) []sibling {
	fd, fi := devIno(first)
	cands, _ := filepath.Glob(path + "?*")
	var out []sibling
	for _, c := range cands {
		switch filepath.Ext(c) {
		case ".gz", ".bz2", ".xz", ".zst", ".lz4", ".Z":
			continue
		}
		fh, err := os.Open(c)
		if err != nil {
			continue
		}
		st, err := fh.Stat()
		keep := false
		if err == nil && st.Mode().IsRegular() && st.Size() > 0 && !st.ModTime().Before(first.ModTime()) {
			d, i := devIno(st)
			h, n := fingerprint(fh, headLen)
			keep = (d != fd || i != fi) && !t.following(d, i) && !(n == headLen && h == head)
		}
		if keep {
			out = append(out, sibling{fh, st})
		} else {
			fh.Close()
		}
	}
	slices.SortFunc(out, func(a, b sibling) int { return a.st.ModTime().Compare(b.st.ModTime()) })
	return out
}

// following reports whether a file with this device and inode is followed.
func (t *Tailer) following(dev, ino uint64) bool {
	for _, f := range t.files {
		if f.dev == dev && f.ino == ino {
			return true
		}
	}
	return false
}

// findCopy looks among the siblings of f for the copy logrotate made: a file
// whose first bytes are f's and that is at least as long as what we read.
func (t *Tailer) findCopy(f *file) (*os.File, os.FileInfo) {
	if f.headLen == 0 {
		return nil, nil
	}
	cands, _ := filepath.Glob(f.path + "?*")
	for _, c := range cands {
		fh, err := os.Open(c)
		if err != nil {
			continue
		}
		st, err := fh.Stat()
		if err == nil && st.Size() >= f.off {
			if d, i := devIno(st); (d != f.dev || i != f.ino) && !t.following(d, i) {
				if h, n := fingerprint(fh, f.headLen); n == f.headLen && h == f.head {
					return fh, st
				}
			}
		}
		fh.Close()
	}
	t.log.Warn("tail: truncated file's copy not found; its unread tail is lost", "path", f.path)
	return nil, nil
}

// restore opens the files of a saved position, wherever rotation moved them.
func (t *Tailer) restore(p Position) {
	for _, fp := range p.Files {
		fh, path := t.locate(fp)
		copied := false
		if fh == nil {
			// Truncated in place while we were down: read the rest from the
			// copy logrotate made, then the file from its start (discover).
			fh, path = t.locateCopy(fp)
			copied = fh != nil
		}
		if fh == nil {
			t.stats.LostFiles++
			t.log.Warn("tail: file from the checkpoint is gone; lines after its offset are lost", "path", fp.Path, "offset", fp.Offset)
			continue
		}
		st, _ := fh.Stat()
		dev, ino := devIno(st)
		f := &file{path: fp.Path, f: fh, dev: dev, ino: ino, off: fp.Offset, line: fp.Line, head: fp.Head, headLen: fp.HeadLen, lastData: time.Now()}
		if fp.Line == 0 && fp.Offset > 0 {
			f.line = -1 // a checkpoint from before line numbers
		}
		f.rotated = path != fp.Path || fp.Rotated
		if cur, err := os.Stat(fp.Path); err == nil {
			cd, ci := devIno(cur)
			f.rotated = !(cd == dev && ci == ino)
		}
		if copied {
			f.copy, f.rotated = true, true
			t.stats.Truncations++
			t.log.Info("tail: file truncated (copytruncate) while stopped; reading its unread lines from the copy",
				"path", fp.Path, "copy", path, "offset", fp.Offset)
		}
		t.files = append(t.files, f)
	}
}

// locate finds the file of fp: at its path, or renamed among its siblings;
// identified by device, inode and head fingerprint.
func (t *Tailer) locate(fp FilePos) (*os.File, string) {
	cands := []string{fp.Path}
	more, _ := filepath.Glob(fp.Path + "?*")
	cands = append(cands, more...)
	for _, c := range cands {
		fh, err := os.Open(c)
		if err != nil {
			continue
		}
		st, err := fh.Stat()
		if err == nil {
			dev, ino := devIno(st)
			h, n := fingerprint(fh, fp.HeadLen)
			if dev == fp.Dev && ino == fp.Ino && n == fp.HeadLen && h == fp.Head && st.Size() >= fp.Offset {
				return fh, c
			}
		}
		fh.Close()
	}
	return nil, ""
}

// locateCopy finds the copy of fp's file that copytruncate made while we were
// down: the file of fp (same device and inode) is still at its path but
// shorter than fp's offset or with other first bytes, and a sibling holds
// fp's head and at least fp's offset. Without a head (an empty file at the
// checkpoint) a copy cannot be told from any other file: nil.
func (t *Tailer) locateCopy(fp FilePos) (*os.File, string) {
	if fp.HeadLen == 0 {
		return nil, ""
	}
	orig, err := os.Open(fp.Path)
	if err != nil {
		return nil, ""
	}
	st, err := orig.Stat()
	if err != nil {
		orig.Close()
		return nil, ""
	}
	h, n := fingerprint(orig, fp.HeadLen)
	orig.Close()
	if dev, ino := devIno(st); dev != fp.Dev || ino != fp.Ino || (st.Size() >= fp.Offset && n == fp.HeadLen && h == fp.Head) {
		return nil, "" // not the same file, or not truncated
	}
	cands, _ := filepath.Glob(fp.Path + "?*")
	for _, c := range cands {
		fh, err := os.Open(c)
		if err != nil {
			continue
		}
		st, err := fh.Stat()
		if err == nil && st.Mode().IsRegular() && st.Size() >= fp.Offset {
			if dev, ino := devIno(st); dev != fp.Dev || ino != fp.Ino {
				if h, n := fingerprint(fh, fp.HeadLen); n == fp.HeadLen && h == fp.Head {
					return fh, c
				}
			}
		}
		fh.Close()
	}
	return nil, ""
}

// Batch limits: a backlog is handed over (and its position committed) in
// pieces, so memory stays bounded and progress survives a crash.
const (
	maxBatchLines = 4096
	maxBatchBytes = 1 << 20
)

func (t *Tailer) full() bool { return len(t.lines) >= maxBatchLines || len(t.arena) >= maxBatchBytes }

// read appends f's new complete lines to t.lines, until the batch is full.
func (t *Tailer) read(f *file, now time.Time) {
	for !t.full() {
		pos := f.off + int64(len(f.partial))
		n, err := f.f.ReadAt(t.buf, pos)
		if n > 0 {
			f.lastData = now
			t.split(f, t.buf[:n])
		}
		if err != nil || n < len(t.buf) {
			if err != nil && !errors.Is(err, io.EOF) {
				t.log.Warn("tail: read", "path", f.path, "err", err)
				return
			}
			if f.copy && len(f.partial) > 0 && !t.full() {
				// A copy does not grow: its unfinished last line is whole.
				t.flushPartial(f)
				f.off += int64(len(f.partial))
				f.partial = f.partial[:0]
			}
			return
		}
	}
}

// split cuts b into lines, carrying an unfinished one in f.partial. It stops
// early when the batch is full; what it did not consume is read again.
func (t *Tailer) split(f *file, b []byte) {
	max := t.cfg.MaxLineBytes
	for len(b) > 0 && !t.full() {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if !f.skipping {
				room := max - len(f.partial)
				if len(b) > room {
					t.emit(f, f.off, append(f.partial, b[:room]...), true)
					f.off += int64(len(f.partial) + len(b))
					f.partial = f.partial[:0]
					f.skipping = true
					return
				}
				f.partial = append(f.partial, b...)
			} else {
				f.off += int64(len(b))
			}
			return
		}
		line := b[:i]
		consumed := int64(i + 1)
		at := f.off
		switch {
		case f.skipping:
			f.skipping = false
		case len(f.partial) > 0:
			consumed += int64(len(f.partial))
			full := append(f.partial, line...)
			t.emit(f, at, full[:min(len(full), max)], len(full) > max)
			f.partial = f.partial[:0]
		default:
			t.emit(f, at, line[:min(len(line), max)], len(line) > max)
		}
		f.off += consumed
		if f.line >= 0 {
			f.line++
		}
		b = b[i+1:]
	}
}

// flushPartial delivers an unfinished last line of a file that will not grow
// (a copytruncate copy).
func (t *Tailer) flushPartial(f *file) {
	if len(f.partial) > 0 && !f.skipping {
		t.emit(f, f.off, f.partial, false)
		if f.line >= 0 {
			f.line++
		}
	}
}

// emit adds the line of f starting at offset at to the batch.
func (t *Tailer) emit(f *file, at int64, data []byte, cut bool) {
	if cut {
		t.stats.CutLines++
	}
	// Earlier lines keep pointing into the arena's old array when append
	// moves it; that array stays as it was.
	start := len(t.arena)
	t.arena = append(t.arena, data...)
	if f.copy {
		t.stats.Recovered++
	}
	num := f.line + 1 // 0 when unknown
	t.lines = append(t.lines, Line{Path: f.path, Data: t.arena[start:len(t.arena):len(t.arena)], Cut: cut, Num: num, Offset: at})
}

// maxCountBytes caps how much of a file followed from its end is read to
// number its lines: beyond it, its lines go unnumbered (Line.Num 0).
const maxCountBytes = 1 << 30

// countLines counts the newlines in f's first n bytes, or returns -1 when n
// is over maxCountBytes or f cannot be read.
func countLines(f *os.File, n int64) int64 {
	if n > maxCountBytes {
		return -1
	}
	var buf [64 << 10]byte
	var lines int64
	for off := int64(0); off < n; {
		k, err := f.ReadAt(buf[:min(int64(len(buf)), n-off)], off)
		lines += int64(bytes.Count(buf[:k], []byte{'\n'}))
		off += int64(k)
		if err != nil && off < n {
			return -1
		}
	}
	return lines
}

func fingerprint(f *os.File, n int) (uint64, int) {
	var b [headBytes]byte
	m, _ := f.ReadAt(b[:min(n, headBytes)], 0)
	return xxhash.Sum64(b[:m]), m
}

func devIno(st os.FileInfo) (uint64, uint64) {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(s.Dev), s.Ino
	}
	return 0, 0
}

// SaveCheckpoint writes p to path atomically (temporary file and rename). A
// consumer that saves after handling each batch reads every line at least
// once; one that stores p together with the batch's effect reads it exactly
// once.
func SaveCheckpoint(path string, p Position) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("tail: checkpoint: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("tail: checkpoint: %w", err)
	}
	return nil
}

// LoadCheckpoint reads a checkpoint written by SaveCheckpoint. A missing file
// gives nil and no error: a first start.
func LoadCheckpoint(path string) (*Position, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tail: checkpoint: %w", err)
	}
	var p Position
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("tail: checkpoint %s: %w", path, err)
	}
	return &p, nil
}

package mitigation

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// State files in Config.StateDir, all JSON lines:
//
//	snapshot.jsonl     the state at the last compaction, written to a temporary
//	                   file, fsynced and renamed over the old one
//	journal.<N>.jsonl  journals rotated by a compaction still in progress (or
//	                   interrupted); removed once the snapshot covering them is
//	                   in place
//	journal.jsonl      records since, appended one write(2) per record
//	lock               flock'ed by the process using the directory
//
// Records are {"op":"meta","version":1,"next_id":N}, {"op":"add",...} with the
// whole mitigation (an upsert by ID) and {"op":"del","id":N}. Replay is
// idempotent, so a crash between two steps of a compaction replays records the
// snapshot already holds, harmlessly.
const (
	snapshotName = "snapshot.jsonl"
	journalName  = "journal.jsonl"
	lockName     = "lock"
	stateVersion = 1
	maxLineLen   = 1 << 20 // far above the largest valid record (16 pairs of 8 KiB)
)

const (
	opMeta = "meta"
	opAdd  = "add"
	opDel  = "del"
)

// record is one decoded line.
type record struct {
	Op     string
	m      Mitigation // add: the whole mitigation; del: the ID only
	NextID uint64     // meta
}

// wireRecord is the JSON form of a record.
type wireRecord struct {
	Op      string `json:"op"`
	Version int    `json:"version,omitempty"`
	NextID  uint64 `json:"next_id,omitempty"`
	ID      uint64 `json:"id,omitempty"`
	Rule    string `json:"rule,omitempty"`
	Action  string `json:"action,omitempty"`
	Scope   Scope  `json:"scope,omitempty"`
	// ScopeB64 replaces Scope when a value is not valid UTF-8, which JSON
	// strings cannot carry: [[name, base64(value)], ...].
	ScopeB64 [][2]string `json:"scope_b64,omitempty"`
	Created  time.Time   `json:"created,omitzero"`
	Expires  time.Time   `json:"expires,omitzero"`
	Origin   Origin      `json:"origin,omitempty"`
}

// appendRecord appends r as one JSON line.
func appendRecord(dst []byte, r record) ([]byte, error) {
	w := wireRecord{Op: r.Op}
	switch r.Op {
	case opMeta:
		w.Version, w.NextID = stateVersion, r.NextID
	case opDel:
		w.ID = r.m.ID
	case opAdd:
		w.ID, w.Rule, w.Action, w.Scope = r.m.ID, r.m.Rule, r.m.Action.String(), r.m.Scope
		if !scopeUTF8(r.m.Scope) {
			w.Scope = nil
			for _, p := range r.m.Scope {
				w.ScopeB64 = append(w.ScopeB64, [2]string{p.Name, base64.StdEncoding.EncodeToString([]byte(p.Value))})
			}
		}
		w.Created, w.Expires, w.Origin = r.m.Created, r.m.Expires, r.m.Origin
	default:
		return dst, fmt.Errorf("unknown op %q", r.Op)
	}
	b, err := json.Marshal(w)
	if err != nil {
		return dst, err
	}
	dst = append(dst, b...)
	return append(dst, '\n'), nil
}

// decodeRecord parses and validates one line (without its newline). Nothing
// it accepts can break the store: scopes are canonical, actions known, times
// set.
func decodeRecord(line []byte) (record, error) {
	var w wireRecord
	d := json.NewDecoder(bytes.NewReader(line))
	d.DisallowUnknownFields()
	if err := d.Decode(&w); err != nil {
		return record{}, err
	}
	if _, err := d.Token(); err != io.EOF {
		return record{}, errors.New("trailing data after the record")
	}
	r := record{Op: w.Op}
	switch w.Op {
	case opMeta:
		if w.Version != stateVersion {
			return record{}, fmt.Errorf("%w: state version %d, this guardd reads %d", errStateVersion, w.Version, stateVersion)
		}
		if w.ID != 0 || w.Rule != "" || w.Action != "" || w.Scope != nil || w.ScopeB64 != nil || !w.Created.IsZero() || !w.Expires.IsZero() || w.Origin != "" {
			return record{}, errors.New("meta record with mitigation fields")
		}
		r.NextID = w.NextID
		return r, nil
	case opDel:
		if w.ID == 0 {
			return record{}, errors.New("del record without id")
		}
		if w.Version != 0 || w.NextID != 0 || w.Rule != "" || w.Action != "" || w.Scope != nil || w.ScopeB64 != nil || !w.Created.IsZero() || !w.Expires.IsZero() || w.Origin != "" {
			return record{}, errors.New("del record with other fields than id")
		}
		r.m.ID = w.ID
		return r, nil
	case opAdd:
	default:
		return record{}, fmt.Errorf("unknown op %q; expect %q, %q or %q", w.Op, opMeta, opAdd, opDel)
	}
	if w.Version != 0 || w.NextID != 0 {
		return record{}, errors.New("add record with meta fields")
	}
	if w.ScopeB64 != nil {
		if w.Scope != nil {
			return record{}, errors.New("add record with both scope and scope_b64")
		}
		if len(w.ScopeB64) > MaxScopePairs {
			return record{}, fmt.Errorf("scope_b64: more than %d pairs", MaxScopePairs)
		}
		for _, p := range w.ScopeB64 {
			v, err := base64.StdEncoding.DecodeString(p[1])
			if err != nil {
				return record{}, fmt.Errorf("scope_b64 value of %q: %w", p[0], err)
			}
			w.Scope = append(w.Scope, Pair{Name: p[0], Value: string(v)})
		}
		if scopeUTF8(w.Scope) {
			return record{}, errors.New("scope_b64 for a scope that is valid UTF-8")
		}
	}
	if w.ID == 0 {
		return record{}, errors.New("add record without id")
	}
	a, err := ParseAction(w.Action)
	if err != nil {
		return record{}, err
	}
	sc, err := Canonical(w.Scope)
	if err != nil {
		return record{}, err
	}
	if !sc.Equal(w.Scope) {
		return record{}, fmt.Errorf("scope %s is not canonical (%s)", w.Scope, sc)
	}
	switch {
	case w.Created.IsZero() || w.Expires.IsZero():
		return record{}, errors.New("add record without created or expires")
	case !inYearRange(w.Created) || !inYearRange(w.Expires):
		return record{}, errors.New("add record with a time outside years 1 to 9999 UTC")
	case w.Origin == "":
		return record{}, errors.New("add record without origin")
	case !w.Origin.Valid():
		return record{}, fmt.Errorf("add record with unknown origin %q", w.Origin)
	case w.Origin == OriginRule && w.Rule == "":
		return record{}, errors.New("add record without rule")
	}
	r.m = Mitigation{ID: w.ID, Rule: w.Rule, Action: a, Scope: sc,
		Created: w.Created.UTC(), Expires: w.Expires.UTC(), Origin: w.Origin}
	return r, nil
}

func scopeUTF8(sc Scope) bool {
	for _, p := range sc {
		if !utf8.ValidString(p.Name) || !utf8.ValidString(p.Value) {
			return false
		}
	}
	return true
}

func inYearRange(t time.Time) bool {
	y := t.UTC().Year()
	return y >= 1 && y <= 9999
}

// errStateVersion marks state written by another version of guardd: not
// damage, so never set aside (a downgrade must not lose it).
var errStateVersion = errors.New("unsupported state version")

// streamResult is what decodeStream found besides the records it applied.
type streamResult struct {
	truncatedAt int64 // offset of a cut last line skipped (tolerateTail); -1 when none
	bad         int   // lines that did not decode, skipped
	firstBad    error // the first of them, "name:line (offset N): ..."
}

// decodeStream reads records from r, calling apply for each. A line that does
// not decode is skipped and counted in bad (the first one's error, naming
// "name:line (offset N)", in firstBad), and reading goes on: the records
// around it still apply. With tolerateTail, a last line without a newline that
// does not decode (a write cut by a crash) is not damage: it is skipped and
// reported through truncatedAt. err is a read error, or a record of another
// state version (errStateVersion).
func decodeStream(r io.Reader, name string, tolerateTail bool, apply func(record)) (res streamResult, err error) {
	res.truncatedAt = -1
	br := bufio.NewReaderSize(r, 64<<10)
	var off int64
	var acc []byte
	for lineNo := 1; ; lineNo++ {
		acc = acc[:0]
		var rerr error
		length, tooLong := 0, false
		for {
			var chunk []byte
			chunk, rerr = br.ReadSlice('\n')
			length += len(chunk)
			if !tooLong {
				acc = append(acc, chunk...)
				if len(acc) > maxLineLen {
					tooLong, acc = true, acc[:0]
				}
			}
			if rerr != bufio.ErrBufferFull {
				break
			}
		}
		if rerr != nil && rerr != io.EOF {
			return res, fmt.Errorf("%s:%d (offset %d): %w", name, lineNo, off, rerr)
		}
		if length == 0 {
			return res, nil
		}
		var derr error
		if tooLong {
			derr = fmt.Errorf("line longer than %d bytes", maxLineLen)
		} else if text := bytes.TrimSpace(acc); len(text) > 0 {
			var rec record
			if rec, derr = decodeRecord(text); derr == nil {
				apply(rec)
			}
		}
		if derr != nil {
			if errors.Is(derr, errStateVersion) {
				return res, fmt.Errorf("%s:%d (offset %d): %w", name, lineNo, off, derr)
			}
			if complete := rerr == nil; !complete && tolerateTail && !tooLong {
				res.truncatedAt = off
				return res, nil
			}
			res.bad++
			if res.firstBad == nil {
				res.firstBad = fmt.Errorf("%s:%d (offset %d): %w", name, lineNo, off, derr)
			}
		}
		off += int64(length)
		if rerr == io.EOF {
			return res, nil
		}
	}
}

// loadState is what the state files hold once replayed.
type loadState struct {
	live     map[uint64]Mitigation
	nextID   uint64
	setAside []setAside // damaged files moved away
}

// setAside is a damaged state file, renamed so that guardd starts with what
// it could read and the file stays for a post-mortem.
type setAside struct {
	path, to string
	bad      int   // lines skipped
	first    error // the first of them
}

func (st *loadState) apply(r record) {
	switch r.Op {
	case opMeta:
		st.nextID = max(st.nextID, r.NextID)
	case opAdd:
		st.live[r.m.ID] = r.m
		st.nextID = max(st.nextID, r.m.ID+1)
	case opDel:
		delete(st.live, r.m.ID)
		st.nextID = max(st.nextID, r.m.ID+1)
	}
}

// journal owns the files of a state directory. Its fields are guarded by
// Store.mu, except during New and the unlocked half of a compaction, which
// touches only files no writer uses.
type journal struct {
	dir     string
	lock    *os.File
	f       *os.File // journal.jsonl, nil once closed
	gen     int      // number for the next rotated journal
	records int      // records appended since the last rotation
	// replayed is set by openJournal when journal files were found: they
	// must be folded into a snapshot before appending.
	replayed bool
	dirty    bool // appended since the last fsync
	buf      []byte
}

// openJournal locks dir and replays its state.
func openJournal(dir string, log *slog.Logger) (*journal, loadState, error) {
	st := loadState{live: make(map[uint64]Mitigation), nextID: 1}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, st, fmt.Errorf("state dir: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, lockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, st, fmt.Errorf("state dir: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, st, fmt.Errorf("state dir %s: in use by another process (flock: %w)", dir, err)
	}
	j := &journal{dir: dir, lock: lock, gen: 1}
	fail := func(err error) (*journal, loadState, error) {
		lock.Close()
		return nil, st, err
	}
	os.Remove(filepath.Join(dir, snapshotName+".tmp")) // an interrupted snapshot
	if err := loadFile(filepath.Join(dir, snapshotName), false, &st, log); err != nil {
		return fail(err)
	}
	gens, err := j.rotated()
	if err != nil {
		return fail(err)
	}
	for _, g := range gens {
		if err := loadFile(j.rotatedPath(g), true, &st, log); err != nil {
			return fail(err)
		}
		j.gen = g + 1
		j.replayed = true
	}
	if err := loadFile(filepath.Join(dir, journalName), true, &st, log); err != nil {
		return fail(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, journalName)); err == nil && fi.Size() > 0 {
		j.replayed = true
	}
	if len(st.setAside) > 0 {
		j.replayed = true // rewrite the state from what was read
	}
	return j, st, nil
}

// loadFile replays one state file into st. A file with damaged lines is
// replayed around them, then renamed aside (see setAsideName) and listed in
// st.setAside: the caller rewrites the state from what was read.
func loadFile(path string, tolerateTail bool, st *loadState, log *slog.Logger) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load state: %w", err)
	}
	defer f.Close()
	res, err := decodeStream(f, path, tolerateTail, st.apply)
	if err != nil {
		return fmt.Errorf("load state %w", err)
	}
	if res.truncatedAt >= 0 {
		log.Warn("mitigation journal ends with a truncated record, skipped (interrupted write)", "file", path, "offset", res.truncatedAt)
	}
	if res.bad == 0 {
		return nil
	}
	to, err := setAsideName(path)
	if err == nil {
		err = os.Rename(path, to)
	}
	if err != nil {
		return fmt.Errorf("load state: %w; set aside damaged %s: %w", res.firstBad, path, err)
	}
	st.setAside = append(st.setAside, setAside{path: path, to: to, bad: res.bad, first: res.firstBad})
	return nil
}

// setAsideName returns a free name for a damaged state file beside it:
// path.corrupt, path.corrupt.2, ... No name it returns is read as state.
func setAsideName(path string) (string, error) {
	for i := 1; i < 1000; i++ {
		to := path + ".corrupt"
		if i > 1 {
			to += "." + strconv.Itoa(i)
		}
		if _, err := os.Lstat(to); errors.Is(err, os.ErrNotExist) {
			return to, nil
		}
	}
	return "", fmt.Errorf("no free name for %s.corrupt.N", path)
}

// rotated lists the numbers of the rotated journals, in order.
func (j *journal) rotated() ([]int, error) {
	ents, err := os.ReadDir(j.dir)
	if err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	var gens []int
	for _, e := range ents {
		mid, ok := strings.CutPrefix(e.Name(), "journal.")
		if !ok {
			continue
		}
		mid, ok = strings.CutSuffix(mid, ".jsonl")
		if g, err := strconv.Atoi(mid); ok && err == nil && g > 0 {
			gens = append(gens, g)
		}
	}
	slices.Sort(gens)
	return gens, nil
}

func (j *journal) rotatedPath(g int) string {
	return filepath.Join(j.dir, "journal."+strconv.Itoa(g)+".jsonl")
}

// append writes one record with a single write(2), so a crash of the process
// loses nothing the kernel has; fsync is left to sync.
func (j *journal) append(r record) error {
	if j.f == nil {
		if err := j.open(); err != nil {
			return err
		}
	}
	var err error
	if j.buf, err = appendRecord(j.buf[:0], r); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if _, err := j.f.Write(j.buf); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	j.records++
	j.dirty = true
	return nil
}

func (j *journal) open() error {
	f, err := os.OpenFile(filepath.Join(j.dir, journalName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	j.f = f
	return nil
}

// rotate closes journal.jsonl (after an fsync), renames it to the next
// journal.<N>.jsonl and, with reopen, starts a new one. It returns the highest
// rotated number, which the next snapshot covers.
func (j *journal) rotate(reopen bool) (int, error) {
	if j.f != nil {
		err := j.f.Sync()
		if cerr := j.f.Close(); err == nil {
			err = cerr
		}
		j.f = nil
		if err != nil {
			return 0, fmt.Errorf("journal: %w", err)
		}
	}
	cur := filepath.Join(j.dir, journalName)
	if _, err := os.Stat(cur); err == nil {
		if err := os.Rename(cur, j.rotatedPath(j.gen)); err != nil {
			return 0, fmt.Errorf("journal: rotate: %w", err)
		}
		j.gen++
	}
	j.records, j.dirty = 0, false
	if reopen {
		if err := j.open(); err != nil {
			return 0, err
		}
	}
	if err := syncDir(j.dir); err != nil {
		return 0, err
	}
	return j.gen - 1, nil
}

// writeSnapshot replaces snapshot.jsonl with live, atomically, then removes
// the rotated journals up to upto, which it covers.
func (j *journal) writeSnapshot(live []Mitigation, nextID uint64, upto int) error {
	path := filepath.Join(j.dir, snapshotName)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	err = writeRecords(f, live, nextID)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(j.dir)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("snapshot %s: %w", path, err)
	}
	gens, err := j.rotated()
	if err != nil {
		return err
	}
	for _, g := range gens {
		if g <= upto {
			if err := os.Remove(j.rotatedPath(g)); err != nil {
				return fmt.Errorf("snapshot: %w", err)
			}
		}
	}
	return syncDir(j.dir)
}

func writeRecords(w io.Writer, live []Mitigation, nextID uint64) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	buf, err := appendRecord(nil, record{Op: opMeta, NextID: nextID})
	if err != nil {
		return err
	}
	for _, m := range live {
		if _, err := bw.Write(buf); err != nil {
			return err
		}
		if buf, err = appendRecord(buf[:0], record{Op: opAdd, m: m}); err != nil {
			return err
		}
	}
	if _, err := bw.Write(buf); err != nil {
		return err
	}
	return bw.Flush()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync dir: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

// close closes the journal and releases the directory lock.
func (j *journal) close() error {
	var err error
	if j.f != nil {
		err = j.f.Sync()
		if cerr := j.f.Close(); err == nil {
			err = cerr
		}
		j.f = nil
	}
	if j.lock != nil {
		if cerr := j.lock.Close(); err == nil {
			err = cerr
		}
		j.lock = nil
	}
	return err
}

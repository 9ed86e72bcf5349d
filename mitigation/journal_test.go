package mitigation

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func openAt(t testing.TB, dir string, now time.Time, log *slog.Logger) (*Store, error) {
	t.Helper()
	return New(Config{StateDir: dir, Now: func() time.Time { return now }}, nil, log)
}

func mustOpenAt(t testing.TB, dir string, now time.Time) *Store {
	t.Helper()
	s, err := openAt(t, dir, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestRestartRestoresRemainingTime(t *testing.T) {
	dir := t.TempDir()
	s := mustOpenAt(t, dir, t0)
	a := mustAdd(t, s, mit("r", ActionBlock, ipScope("192.0.2.1"), 10*time.Minute), t0)
	b := mustAdd(t, s, mit("r", ActionRateLimit, ipScope("192.0.2.2"), 2*time.Minute), t0)
	c := mustAdd(t, s, mit("r", ActionBlock, ipScope("192.0.2.3"), 10*time.Minute), t0)
	d := mustAdd(t, s, mit("r", ActionShadowBan, Scope{{Name: `http.cookies["s"]`, Value: "x y"}, {Name: "http.path", Value: "/login"}}, 10*time.Minute), t0)
	mustAdd(t, s, mit("r", ActionShadowBan, d.Scope, 30*time.Minute), t0) // extends d
	s.Delete(c.ID)
	e := mustAdd(t, s, mit("r", ActionBlock, ipScope("192.0.2.5"), time.Minute), t0)
	s.Delete(e.ID) // the highest ID is gone: IDs must still not be reused
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, _, err := s.Add(mit("r", ActionBlock, ipScope("192.0.2.9"), time.Minute), t0); err != ErrClosed {
		t.Errorf("Add after Close: %v, want ErrClosed", err)
	}

	later := t0.Add(5 * time.Minute)
	s2 := mustOpenAt(t, dir, later)
	got := s2.List(later)
	if len(got) != 2 || got[0].ID != a.ID || got[1].ID != d.ID {
		t.Fatalf("restored %v, want [%d %d] (b expired, c deleted)", ids(got), a.ID, d.ID)
	}
	if rem := got[0].Expires.Sub(later); rem != 5*time.Minute {
		t.Errorf("a has %s left, want 5m", rem)
	}
	if rem := got[1].Expires.Sub(later); rem != 25*time.Minute {
		t.Errorf("d has %s left, want 25m (extension kept)", rem)
	}
	if !got[1].Scope.Equal(d.Scope) || got[1].Action != ActionShadowBan || got[1].Rule != "r" || !got[1].Created.Equal(t0) || got[1].Origin != "rule" {
		t.Errorf("d restored as %+v, want %+v", got[1], d)
	}
	if m, ok := s2.Lookup(a.Scope.Key(), later); !ok || m.ID != a.ID {
		t.Errorf("Lookup of restored a = %v %v", m, ok)
	}
	if _, ok := s2.Lookup(b.Scope.Key(), later); ok {
		t.Error("expired b restored")
	}
	if n := mustAdd(t, s2, mit("r", ActionBlock, ipScope("192.0.2.6"), time.Hour), later); n.ID <= e.ID {
		t.Errorf("new ID %d after restart, want > %d", n.ID, e.ID)
	}
	// The restored entries count in the gauges.
	if g := value(s2.met.active[ActionShadowBan]); g != 1 {
		t.Errorf("active{shadowban} = %v after restore", g)
	}
}

// TestRestartBinaryValues: values that are not UTF-8 (a raw cookie seen on
// the wire) survive a restart byte for byte, so the key still matches.
func TestRestartBinaryValues(t *testing.T) {
	dir := t.TempDir()
	s := mustOpenAt(t, dir, t0)
	sc := Scope{{Name: `http.cookies["s"]`, Value: "a\xff\xfe\x00b"}, {Name: "http.path", Value: "/é"}}
	mustAdd(t, s, mit("r", ActionBlock, sc, time.Hour), t0)
	mustAdd(t, s, mit("r", ActionBlock, ipScope("192.0.2.1"), time.Hour), t0)
	// Once from the journal (no Close), once from the snapshot.
	s.journal.close()
	s.journal = nil
	for range 2 {
		s2 := mustOpenAt(t, dir, t0)
		if m, ok := s2.Lookup(sc.Key(), t0); !ok || !m.Scope.Equal(sc) {
			t.Fatalf("binary scope after restart: %v %q", ok, m.Scope)
		}
		if s2.Len() != 2 {
			t.Errorf("Len = %d", s2.Len())
		}
		s2.Close()
	}
}

func TestStateDirLocked(t *testing.T) {
	dir := t.TempDir()
	mustOpenAt(t, dir, t0)
	if _, err := openAt(t, dir, t0, nil); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second New on one dir: %v, want in use", err)
	}
}

// journalOf builds journal bytes: one line per record.
func journalOf(t testing.TB, recs ...record) []byte {
	t.Helper()
	var b []byte
	for _, r := range recs {
		var err error
		if b, err = appendRecord(b, r); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func addRec(id uint64, ip string, ttl time.Duration) record {
	return record{Op: opAdd, m: Mitigation{ID: id, Rule: "r", Action: ActionBlock, Scope: ipScope(ip), Created: t0, Expires: t0.Add(ttl), Origin: "rule"}}
}

func TestTruncatedJournalLoads(t *testing.T) {
	head := journalOf(t, addRec(1, "192.0.2.1", time.Hour), addRec(2, "192.0.2.2", time.Hour), record{Op: opDel, m: Mitigation{ID: 1}})
	for _, last := range []record{
		addRec(3, "2001:db8::3", time.Hour),
		{Op: opDel, m: Mitigation{ID: 2}},
	} {
		full := journalOf(t, last)
		t.Run(last.Op, func(t *testing.T) {
			for cut := 0; cut <= len(full); cut++ {
				dir := t.TempDir()
				if err := os.WriteFile(filepath.Join(dir, journalName), append(bytes.Clone(head), full[:cut]...), 0o600); err != nil {
					t.Fatal(err)
				}
				// Every cut through the loader New uses (no fsync: fast) ...
				var logs bytes.Buffer
				j, st, err := openJournal(dir, slog.New(slog.NewTextHandler(&logs, nil)))
				if err != nil {
					t.Fatalf("cut at %d of %d: %v", cut, len(full), err)
				}
				j.close()
				var got []uint64
				for id := range st.live {
					got = append(got, id)
				}
				slices.Sort(got)
				// Without its newline the record is whole JSON and is kept.
				applied := cut >= len(full)-1
				want := []uint64{2}
				switch {
				case applied && last.Op == opAdd:
					want = []uint64{2, 3}
				case applied:
					want = nil
				}
				if !slices.Equal(got, want) {
					t.Errorf("cut at %d of %d: restored %v, want %v", cut, len(full), got, want)
				}
				warned := strings.Contains(logs.String(), "truncated")
				if wantWarn := cut > 0 && !applied; warned != wantWarn {
					t.Errorf("cut at %d: warned %v, want %v; log: %s", cut, warned, wantWarn, logs.String())
				}
				// ... and a few through New and a second start: the compaction
				// at New removed the damaged tail, so the second start loads
				// cleanly and the state did not change.
				if cut > 1 && cut < len(full)-2 && cut != len(full)/2 {
					continue
				}
				for range 2 {
					logs.Reset()
					s, err := openAt(t, dir, t0, slog.New(slog.NewTextHandler(&logs, nil)))
					if err != nil {
						t.Fatalf("cut at %d: New: %v", cut, err)
					}
					if !slices.Equal(ids(s.List(t0)), want) && !(len(want) == 0 && s.Len() == 0) {
						t.Errorf("cut at %d: New restored %v, want %v", cut, ids(s.List(t0)), want)
					}
					s.Close()
				}
				if strings.Contains(logs.String(), "truncated") {
					t.Errorf("cut at %d: second start still warns: %s", cut, logs.String())
				}
			}
		})
	}
}

// TestCorruptStateSetAside: a damaged snapshot or journal does not keep the
// store down. The lines around the damage are read, the file is renamed to
// <name>.corrupt, the failure is logged with file:line and counted, and the
// state is rewritten so the next start is clean.
func TestCorruptStateSetAside(t *testing.T) {
	one := journalOf(t, addRec(1, "192.0.2.1", time.Hour))
	two := journalOf(t, addRec(2, "192.0.2.2", time.Hour))
	for _, tc := range []struct {
		name    string
		file    string
		content string
		wantErr string
		want    []uint64 // restored
	}{
		{"middle line", journalName, string(one) + "{\"op\":\"add\"\n" + string(two), journalName + ":2 (offset " + strconv.Itoa(len(one)) + ")", []uint64{1, 2}},
		{"unknown op", journalName, `{"op":"put","id":1}` + "\n" + string(two), "unknown op", []uint64{2}},
		{"unknown field", journalName, string(one) + `{"op":"del","id":1,"x":2}` + "\n", `unknown field`, []uint64{1}},
		{"del without id", journalName, `{"op":"del"}` + "\n", "without id", nil},
		{"non-canonical scope", journalName, strings.Replace(string(one), "192.0.2.1", "::ffff:192.0.2.1", 1) + string(two), "not canonical", []uint64{2}},
		{"bad action", journalName, strings.Replace(string(one), `"block"`, `"ban"`, 1), "unknown action", nil},
		{"trailing data", journalName, `{"op":"del","id":1} {}` + "\n", "trailing data", nil},
		// A snapshot is renamed into place whole: a cut one is damage, not a crash.
		{"truncated snapshot", snapshotName, string(one) + string(two[:len(two)-5]), snapshotName + ":2 (offset " + strconv.Itoa(len(one)) + ")", []uint64{1}},
		{"garbage snapshot", snapshotName, "\x00\x01binary\n" + string(two), snapshotName + ":1 (offset 0)", []uint64{2}},
		{"long line", journalName, string(one) + strings.Repeat(" x", maxLineLen) + "\n" + string(two), "longer than", []uint64{1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tc.file)
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			reg := prometheus.NewRegistry()
			s, err := New(Config{StateDir: dir, Now: func() time.Time { return t0 }}, reg, slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if got := ids(s.List(t0)); !slices.Equal(got, tc.want) {
				t.Errorf("restored %v, want %v", got, tc.want)
			}
			if got := gather(t, reg)["guardd_mitigation_state_files_set_aside_total"]; got != 1 {
				t.Errorf("set-aside metric = %v, want 1", got)
			}
			if l := logs.String(); !strings.Contains(l, "level=ERROR") || !strings.Contains(l, tc.wantErr) || !strings.Contains(l, path+".corrupt") {
				t.Errorf("log does not name the damage (%q) and where the file went: %s", tc.wantErr, l)
			}
			if b, err := os.ReadFile(path + ".corrupt"); err != nil || string(b) != tc.content {
				t.Errorf("set-aside file: %v, content kept %v", err, string(b) == tc.content)
			}
			s.Close()
			// The state was rewritten: the next start is clean and the same.
			logs.Reset()
			s, err = New(Config{StateDir: dir, Now: func() time.Time { return t0 }}, nil, slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := ids(s.List(t0)); !slices.Equal(got, tc.want) {
				t.Errorf("second start restored %v, want %v", got, tc.want)
			}
			if strings.Contains(logs.String(), "damaged") {
				t.Errorf("second start still reports damage: %s", logs.String())
			}
		})
	}
}

// TestFutureStateVersionFails: state from another guardd version is not
// damage: New fails naming it and leaves the file where it is.
func TestFutureStateVersionFails(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, snapshotName)
	if err := os.WriteFile(path, []byte(`{"op":"meta","version":2,"next_id":1}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := openAt(t, dir, t0, nil)
	if err == nil || !strings.Contains(err.Error(), "state version 2") || !strings.Contains(err.Error(), path) {
		t.Fatalf("New: %v, want an error naming %s and its version", err, path)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the file was moved: %v", err)
	}
	// The directory is not left locked by the failure.
	os.Remove(path)
	s, err := openAt(t, dir, t0, nil)
	if err != nil {
		t.Fatalf("New after removing the file: %v", err)
	}
	s.Close()
}

func TestInterruptedCompaction(t *testing.T) {
	// A crash after rotating the journal but before the new snapshot landed
	// leaves: old snapshot, journal.1, journal.2, journal.
	dir := t.TempDir()
	files := map[string][]byte{
		snapshotName:          journalOf(t, record{Op: opMeta, NextID: 3}, addRec(1, "192.0.2.1", time.Hour), addRec(2, "192.0.2.2", time.Hour)),
		"journal.1.jsonl":     journalOf(t, record{Op: opDel, m: Mitigation{ID: 1}}, addRec(3, "192.0.2.3", time.Hour)),
		"journal.2.jsonl":     journalOf(t, addRec(2, "192.0.2.2", 2*time.Hour), addRec(4, "192.0.2.4", time.Hour)), // 2 replayed, extended
		journalName:           journalOf(t, record{Op: opDel, m: Mitigation{ID: 4}}),
		snapshotName + ".tmp": []byte("{half a snap"),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := mustOpenAt(t, dir, t0)
	got := s.List(t0)
	if fmt.Sprint(ids(got)) != "[2 3]" || !got[0].Expires.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("restored %v, want [2 3] with 2 extended", got)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if fmt.Sprint(names) != "[journal.jsonl lock snapshot.jsonl]" {
		t.Errorf("files after New: %v, want the rotated journals and temp file gone", names)
	}
	if n := mustAdd(t, s, mit("r", ActionBlock, ipScope("192.0.2.9"), time.Hour), t0); n.ID != 5 {
		t.Errorf("next ID = %d, want 5", n.ID)
	}
}

func TestCompaction(t *testing.T) {
	dir := t.TempDir()
	s := mustOpenAt(t, dir, t0)
	for i := range 10 {
		m := mustAdd(t, s, mit("r", ActionBlock, ipScope(fmt.Sprintf("192.0.2.%d", i)), time.Hour), t0)
		if i%2 == 0 {
			s.Delete(m.ID)
		}
	}
	if err := s.compact(false); err != nil {
		t.Fatal(err)
	}
	snap, err := os.ReadFile(filepath.Join(dir, snapshotName))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(snap, []byte("\n")); n != 6 {
		t.Errorf("snapshot has %d lines, want meta + 5", n)
	}
	if fi, err := os.Stat(filepath.Join(dir, journalName)); err != nil || fi.Size() != 0 {
		t.Errorf("journal after compaction: %v, %v", fi, err)
	}
	mustAdd(t, s, mit("r", ActionBlock, ipScope("192.0.2.100"), time.Hour), t0)
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2 := mustOpenAt(t, dir, t0)
	if s2.Len() != 6 {
		t.Errorf("after compaction and restart: %d, want 6", s2.Len())
	}
}

// TestRunExpiresAndSyncs drives Run on a fake clock.
func TestRunExpiresAndSyncs(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		s, err := New(Config{StateDir: dir}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- s.Run(ctx) }()
		now := time.Now()
		mustAdd(t, s, Mitigation{Rule: "r", Scope: ipScope("192.0.2.1"), Expires: now.Add(time.Second)}, now)
		mustAdd(t, s, Mitigation{Rule: "r", Scope: ipScope("192.0.2.2"), Expires: now.Add(time.Hour)}, now)
		time.Sleep(150 * time.Millisecond) // the bubble's clock: Run's 100 ms tick passes
		s.mu.Lock()
		dirty := s.journal.dirty
		s.mu.Unlock()
		if dirty {
			t.Error("journal not synced after 150 ms of Run")
		}
		time.Sleep(time.Second) // the bubble's clock: the first mitigation's expiry passes
		if s.Len() != 1 {
			t.Errorf("Len = %d a second later, want 1 (Run expires)", s.Len())
		}
		// Churn past the compaction threshold: Run folds the journal into
		// the snapshot.
		for i := range 5000 {
			m := mustAdd(t, s, Mitigation{Rule: "churn", Scope: ipScope(fmt.Sprintf("10.1.%d.%d", i/256, i%256)), Expires: now.Add(time.Hour)}, time.Now())
			s.Delete(m.ID)
		}
		time.Sleep(200 * time.Millisecond) // the bubble's clock: Run's next ticks compact
		s.mu.Lock()
		records := s.journal.records
		s.mu.Unlock()
		if records != 0 {
			t.Errorf("journal holds %d records after Run, want a compaction", records)
		}
		if snap, err := os.ReadFile(filepath.Join(dir, snapshotName)); err != nil || bytes.Count(snap, []byte("\n")) != 2 {
			t.Errorf("snapshot after compaction: %d lines, %v; want meta + 1", bytes.Count(snap, []byte("\n")), err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	})
}

// TestCrash kills a process that has added mitigations (SIGKILL, no Close)
// and checks that a new store restores them all.
func TestCrash(t *testing.T) {
	if dir := os.Getenv("MITIGATION_CRASH_DIR"); dir != "" {
		crashChild(dir)
		return
	}
	if testing.Short() {
		t.Skip("starts a subprocess")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrash$")
	cmd.Env = append(os.Environ(), "MITIGATION_CRASH_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var added int
	for sc.Scan() {
		if n, ok := strings.CutPrefix(sc.Text(), "added "); ok {
			added, _ = strconv.Atoi(n)
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if added == 0 {
		t.Fatal("child reported nothing")
	}
	now := time.Now()
	s := mustOpenAt(t, dir, now)
	if s.Len() != added-1 {
		t.Errorf("restored %d after kill -9, want %d (%d added, one deleted)", s.Len(), added-1, added)
	}
}

func crashChild(dir string) {
	s, err := New(Config{StateDir: dir}, nil, nil)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	now := time.Now()
	const n = 500
	for i := range n {
		m, _, err := s.Add(Mitigation{Rule: "r", Action: ActionBlock, Scope: ipScope(fmt.Sprintf("10.0.%d.%d", i/256, i%256)), Expires: now.Add(time.Hour)}, now)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		if i == 7 {
			s.Delete(m.ID)
		}
	}
	fmt.Printf("added %d\n", n)
	time.Sleep(time.Minute) // the child waits to be killed by the test: the crash under test
	os.Exit(3)
}

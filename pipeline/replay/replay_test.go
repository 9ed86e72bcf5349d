package replay_test

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/guardd/guardd/bench/loggen"
	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/config"
	"github.com/guardd/guardd/ingest/nginxlog"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/verdict"
	"github.com/guardd/guardd/pipeline"
	"github.com/guardd/guardd/pipeline/replay"
)

type fixture struct {
	dir    string
	log    string
	labels *loggen.Labels
}

func generate(t testing.TB, cfg loggen.Config, gz bool) fixture {
	t.Helper()
	dir := t.TempDir()
	name := filepath.Join(dir, "access.log")
	if gz {
		name += ".gz"
	}
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	var w interface {
		Write([]byte) (int, error)
		Close() error
	} = f
	if gz {
		w = gzip.NewWriter(f)
	}
	labels, err := loggen.Generate(w, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if gz {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return fixture{dir: dir, log: name, labels: labels}
}

// newPipeline builds the built-in rules for format, with db as the ASN and
// country database when given.
func newPipeline(t testing.TB, format, db string) *pipeline.Pipeline {
	t.Helper()
	cfg := config.Default()
	cfg.Log.Format = format
	cfg.Characteristics.ASNDatabase, cfg.Characteristics.CountryDatabase = db, db
	p, err := pipeline.Build(cfg, pipeline.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func run(t testing.TB, fx fixture, workers int, paths ...string) ([]pipeline.Mitigation, replay.Stats) {
	ms, st, _ := runClients(t, fx, workers, paths...)
	return ms, st
}

// runClients also returns the clients a mitigation actioned or covered.
func runClients(t testing.TB, fx fixture, workers int, paths ...string) ([]pipeline.Mitigation, replay.Stats, []pipeline.Client) {
	t.Helper()
	db := filepath.Join(fx.dir, "geo.mmdb")
	if err := fx.labels.GeoDB(db); err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		paths = []string{fx.log}
	}
	rep := pipeline.NewReport(true)
	st, err := replay.Run(context.Background(), replay.Config{Pipeline: newPipeline(t, loggen.GuarddLogFormat, db), Report: rep, Workers: workers}, paths)
	if err != nil {
		t.Fatal(err)
	}
	return rep.Mitigations(), st, rep.Clients()
}

// TestReplayFindsEveryAttacker is the core acceptance test: a labelled log of
// benign browsing from thousands of IPv4 and IPv6 clients plus one campaign
// per built-in rule. Every attacker must be mitigated by the rule aimed at it,
// and no benign client, prefix, fingerprint, cookie or network may be.
func TestReplayFindsEveryAttacker(t *testing.T) {
	benign := 3000
	if testing.Short() {
		benign = 500
	}
	fx := generate(t, loggen.Config{Seed: 1, Benign: benign}, true)
	ms, st, hit := runClients(t, fx, 0)
	if st.Lines != int64(fx.labels.Lines) || st.Malformed != 0 {
		t.Fatalf("read %d lines (%d malformed), generated %d", st.Lines, st.Malformed, fx.labels.Lines)
	}
	t.Logf("%d lines, %d mitigations, %d mitigated requests", st.Lines, len(ms), st.Mitigated)

	found := map[string]bool{} // rule|scope|value
	for _, m := range ms {
		for _, f := range m.Scope {
			found[m.Rule+"|"+f.Name+"|"+f.Value] = true
			// A challenge is friction for a person's browser, not harm:
			// bounded below, per client.
			if benignValue(fx.labels, f) && m.Action != mitigation.ActionChallenge {
				t.Errorf("benign %s=%s mitigated by %s (count %d)", f.Name, f.Value, m.Rule, m.Count)
			}
		}
	}
	// The definition that matters: no benign client ever got an action, whatever
	// the scope of the mitigation that applied to it.
	challenged := 0
	for _, c := range hit {
		if !fx.labels.BenignIPs[c.Addr.String()] {
			continue
		}
		if c.Actioned > 0 && c.Actions[mitigation.ActionChallenge] == c.Actioned && !loggen.NonBrowser[fx.labels.Actors[c.Addr.String()]] {
			challenged++ // a browser shown a challenge: friction
			continue
		}
		t.Errorf("benign client %s got %d actioned requests (mitigated %v, by %v)", c.Addr, c.Actioned, c.Mitigated, c.Rules)
	}
	if n := len(fx.labels.BenignIPs); float64(challenged) > 0.02*float64(n) {
		t.Errorf("%d of %d benign clients challenged: more than 2%%", challenged, n)
	} else {
		t.Logf("%d of %d benign clients challenged (friction)", challenged, n)
	}
	if len(hit) == 0 {
		t.Error("no client actioned at all")
	}
	for _, a := range fx.labels.Attacks {
		missed := 0
		for _, v := range a.Values {
			if !found[a.Rule+"|"+a.Scope+"|"+v] {
				missed++
				t.Errorf("%s: %s=%s not mitigated by %s", a.Name, a.Scope, v, a.Rule)
			}
		}
		if missed == 0 {
			t.Logf("%-45s caught by %-28s (%d %s)", a.Name, a.Rule, len(a.Values), a.Scope)
		}
	}
}

func benignValue(l *loggen.Labels, f characteristics.Field) bool {
	switch f.Name {
	case "ip.src":
		return l.BenignIPs[f.Value]
	case "ip.src.prefix":
		return l.BenignPrefix[f.Value]
	case "tls.ja4":
		return l.BenignJA4[f.Value]
	case `http.cookies["session"]`:
		return l.BenignCookies[f.Value]
	case "ip.src.asnum":
		return l.BenignASNs[f.Value]
	}
	return false
}

// TestReplayDeterministic checks that the result does not depend on how many
// workers prepared the events, and that a log split into two files (one
// gzip) gives the same result as the whole.
func TestReplayDeterministic(t *testing.T) {
	fx := generate(t, loggen.Config{Seed: 2, Benign: 300}, false)
	one, _ := run(t, fx, 1)
	four, _ := run(t, fx, 4)
	if a, b := summary(one), summary(four); a != b {
		t.Fatalf("1 worker and 4 workers differ:\n%s\n---\n%s", a, b)
	}
	data, err := os.ReadFile(fx.log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	half := len(lines) / 2
	first := filepath.Join(fx.dir, "access.log.1.gz")
	f, _ := os.Create(first)
	zw := gzip.NewWriter(f)
	zw.Write([]byte(strings.Join(lines[:half], "")))
	zw.Close()
	f.Close()
	second := filepath.Join(fx.dir, "access.log.0")
	os.WriteFile(second, []byte(strings.Join(lines[half:], "")), 0o644)
	split, _ := run(t, fx, 2, first, second)
	if a, b := summary(one), summary(split); a != b {
		t.Fatalf("whole and split logs differ:\n%s\n---\n%s", a, b)
	}
	if len(one) == 0 {
		t.Fatal("no mitigations at all")
	}
}

func summary(ms []pipeline.Mitigation) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "%s %v %d %d %s %s\n", m.Rule, m.Scope, m.Count, m.Trips, m.FirstSeen, m.Expires)
	}
	return b.String()
}

// TestReplayMalformed checks that bad lines are counted, reported with file
// and line, and skipped, and the good lines around them still count.
func TestReplayMalformed(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "bad.log")
	var b strings.Builder
	for i := range 40 {
		switch i {
		case 3:
			b.WriteString("this is not a log line\n")
		case 7:
			b.WriteString(`203.0.113.99 - - [01/Nov/2026:10:00:07 +0000] "GET / HTTP/1.1" notastatus 12 "-" "x"` + "\n")
		default:
			fmt.Fprintf(&b, `203.0.113.99 - - [01/Nov/2026:10:00:%02d +0000] "GET /nothing-%d HTTP/1.1" 404 12 "-" "sqlmap/1.8"`+"\n", i, i)
		}
	}
	os.WriteFile(log, []byte(b.String()), 0o644)
	rep := pipeline.NewReport(false)
	st, err := replay.Run(context.Background(), replay.Config{Pipeline: newPipeline(t, "combined", ""), Report: rep, MaxErrors: 5}, []string{log})
	if err != nil {
		t.Fatal(err)
	}
	if st.Lines != 40 || st.Malformed != 2 || st.Events != 38 {
		t.Fatalf("lines %d malformed %d events %d; want 40, 2, 38", st.Lines, st.Malformed, st.Events)
	}
	want := []string{"bad.log:4:", "bad.log:8:"}
	for i, err := range st.Errors {
		var le *nginxlog.LineError
		if !errors.As(err, &le) || !strings.Contains(err.Error(), want[i]) {
			t.Errorf("error %d = %v, want it to name %s", i, err, want[i])
		}
	}
	if len(rep.Mitigations()) == 0 {
		t.Error("the good lines (a scanner) were not counted")
	}
}

// TestReplayLineNumbers: a log read in blocks that the workers split still
// names each bad line by its number, however far into the file; a line over
// nginxlog.DefaultMaxLine is cut (and then malformed), "\r\n" is a line end,
// and a last line without '\n' counts.
func TestReplayLineNumbers(t *testing.T) {
	log := filepath.Join(t.TempDir(), "big.log")
	var b strings.Builder
	const lines = 20000
	bad := map[int]string{4: "not a line", 9001: strings.Repeat("x", nginxlog.DefaultMaxLine+5000), 15000: "also not a line", lines: "the last, without a newline"}
	for i := 1; i <= lines; i++ {
		end := "\n"
		if i%3 == 0 {
			end = "\r\n"
		}
		if i == lines {
			end = ""
		}
		if l, ok := bad[i]; ok {
			b.WriteString(l + end)
			continue
		}
		fmt.Fprintf(&b, `198.51.100.%d - - [01/Nov/2026:10:%02d:%02d +0000] "GET /page-%d HTTP/1.1" 200 12 "-" "Mozilla/5.0"`+end, i%250, i/60%60, i%60, i)
	}
	os.WriteFile(log, []byte(b.String()), 0o644)
	st, err := replay.Run(context.Background(), replay.Config{Pipeline: newPipeline(t, "combined", ""), MaxErrors: 10}, []string{log})
	if err != nil {
		t.Fatal(err)
	}
	if st.Lines != lines || st.Malformed != 4 || st.Events != lines-4 {
		t.Fatalf("lines %d malformed %d events %d; want %d, 4, %d", st.Lines, st.Malformed, st.Events, lines, lines-4)
	}
	want := []string{"big.log:4:", "big.log:9001:", "big.log:15000:", fmt.Sprintf("big.log:%d:", lines)}
	if len(st.Errors) != len(want) {
		t.Fatalf("errors %v, want %d", st.Errors, len(want))
	}
	for i, err := range st.Errors {
		if !strings.Contains(err.Error(), want[i]) {
			t.Errorf("error %d = %v, want it to name %s", i, err, want[i])
		}
	}
}

func TestReplayMissingFile(t *testing.T) {
	_, err := replay.Run(context.Background(), replay.Config{Pipeline: newPipeline(t, "combined", "")}, []string{"/nonexistent/access.log"})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/access.log") {
		t.Fatalf("err = %v, want it to name the file", err)
	}
}

// TestReplayCorruptGzip: a gzip file damaged part way loses only its own
// tail; the lines before the damage and the other files are replayed, and
// the damage is reported (defect 8: one corrupt .gz threw away the whole
// replay's output).
func TestReplayCorruptGzip(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, `203.0.113.%d - - [01/Nov/2026:10:%02d:%02d +0000] "GET /nothing-%d HTTP/1.1" 404 12 "-" "sqlmap/1.8"`+"\n", i%200, i/60%60, i%60, i)
	}
	var zb strings.Builder
	zw := gzip.NewWriter(&zb)
	zw.Write([]byte(b.String()))
	zw.Close()
	z := []byte(zb.String())
	for i := len(z) / 2; i < len(z)/2+64; i++ {
		z[i] ^= 0x5a // damage the middle of the stream
	}
	bad := filepath.Join(dir, "access.log.1.gz")
	os.WriteFile(bad, z, 0o644)
	good := filepath.Join(dir, "access.log")
	os.WriteFile(good, []byte(`198.51.100.1 - - [01/Nov/2026:11:00:00 +0000] "GET / HTTP/1.1" 200 12 "-" "curl/8"`+"\n"), 0o644)
	rep := pipeline.NewReport(false)
	st, err := replay.Run(context.Background(), replay.Config{Pipeline: newPipeline(t, "combined", ""), Report: rep}, []string{bad, good})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.FileErrors) != 1 || !strings.Contains(st.FileErrors[0].Error(), bad) {
		t.Fatalf("file errors %v, want one naming %s", st.FileErrors, bad)
	}
	if st.Lines == 0 || st.Lines >= 3001 || st.Last.Hour() != 11 {
		t.Fatalf("read %d lines, last event %s: want the lines before the damage and the next file", st.Lines, st.Last)
	}
	if len(rep.Mitigations()) == 0 {
		t.Error("the lines before the damage made no mitigations")
	}
}

// TestReplayAllMalformed: a log none of whose lines parse (the wrong
// format) is an error, not an empty result (defect 8).
func TestReplayAllMalformed(t *testing.T) {
	log := filepath.Join(t.TempDir(), "access.log")
	os.WriteFile(log, []byte(`{"remote_addr":"203.0.113.1","time_iso8601":"2026-11-01T10:00:00+00:00"}`+"\n"+"not a line\n"), 0o644)
	_, err := replay.Run(context.Background(), replay.Config{Pipeline: newPipeline(t, "combined", "")}, []string{log})
	if !errors.Is(err, replay.ErrNoEvents) || !strings.Contains(err.Error(), "all 2 lines malformed") || !strings.Contains(err.Error(), "access.log:1:") {
		t.Fatalf("err = %v, want ErrNoEvents naming the count and the first bad line", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.log")
	os.WriteFile(empty, nil, 0o644)
	if _, err := replay.Run(context.Background(), replay.Config{Pipeline: newPipeline(t, "combined", "")}, []string{empty}); err != nil {
		t.Fatalf("an empty log: %v", err)
	}
}

// TestReplayTallyAsVerdict checks that a replay that reads no verdicts (no
// clients, no OnVerdict) tallies the mitigations each request meets as the
// verdict path does: the same counts, last requests and mitigated requests
// on a labelled log.
func TestReplayTallyAsVerdict(t *testing.T) {
	fx := generate(t, loggen.Config{Seed: 3, Benign: 300}, false)
	db := filepath.Join(fx.dir, "geo.mmdb")
	if err := fx.labels.GeoDB(db); err != nil {
		t.Fatal(err)
	}
	replayed := func(verdicts bool) (string, replay.Stats) {
		rep := pipeline.NewReport(false)
		decided := 0
		if verdicts {
			rep.OnVerdict = func(netip.Addr, time.Time, verdict.Decision) { decided++ }
		}
		st, err := replay.Run(context.Background(), replay.Config{Pipeline: newPipeline(t, loggen.GuarddLogFormat, db), Report: rep, Workers: 2}, []string{fx.log})
		if err != nil {
			t.Fatal(err)
		}
		if verdicts && int64(decided) != st.Events {
			t.Fatalf("%d verdicts on %d events", decided, st.Events)
		}
		var b strings.Builder
		for _, m := range rep.Mitigations() {
			fmt.Fprintf(&b, "%s %s %v %d %d %s %s %s\n", m.Rule, m.Action, m.Scope, m.Count, m.Trips, m.FirstSeen, m.LastSeen, m.Expires)
		}
		return b.String(), st
	}
	tally, tst := replayed(false)
	decided, dst := replayed(true)
	if tally == "" || tst.Mitigated == 0 {
		t.Fatal("no mitigation applied at all")
	}
	if tally != decided || tst.Mitigated != dst.Mitigated {
		t.Fatalf("tally (%d mitigated requests) and verdicts (%d) differ:\n%s\n---\n%s", tst.Mitigated, dst.Mitigated, tally, decided)
	}
}

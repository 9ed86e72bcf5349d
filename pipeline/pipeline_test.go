package pipeline

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/characteristics/mmdbtest"
	"github.com/guardd/guardd/config"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/rules/engine"
)

const loginRule = `# METADATA
# title: test login
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 3
#   action: block
#   mitigation_timeout: 10m
package guardd.rules.login

count if {
	input.http.path == "/login"
	input.http.status == 401
}

mitigate if input.http.path != "/health"
`

// build makes a pipeline of the login rule; extra is YAML for the config.
func build(t testing.TB, extra string) *Pipeline {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "login.rego"), []byte(loginRule), 0o644)
	cfg, err := config.Parse("t.yml", []byte(fmt.Sprintf("rules: {disable_builtin: true, dirs: [%q]}\n%s", dir, extra)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(cfg, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func geoDB(t testing.TB) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "geo.mmdb")
	if err := mmdbtest.Write(db, []mmdbtest.Network{{Prefix: netip.MustParsePrefix("203.0.113.0/24"), ASN: 64500, Country: "NL"}}); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestHolderKeepsEnricherOpen: a reload must not close the MaxMind reader
// under a batch or a decision still using the old pipeline (defect 1: the
// daemon faulted in maxminddb on SIGHUP).
func TestHolderKeepsEnricherOpen(t *testing.T) {
	db := geoDB(t)
	extra := fmt.Sprintf("characteristics: {asn_database: %q}\n", db)
	h := NewHolder(build(t, extra))
	inUse := h.Acquire()
	h.Swap(build(t, extra)) // a reload while inUse is held
	ev := characteristics.Event{IP: netip.MustParseAddr("203.0.113.9")}
	inUse.Enrich(&ev)
	if ev.ASN != 64500 {
		t.Fatalf("ASN %d after a reload: the old pipeline's reader was closed while in use", ev.ASN)
	}
	inUse.Release()
	if inUse.enricher.Enrich(&characteristics.Event{}); inUse.refs.Load() != 0 {
		t.Fatalf("old pipeline holds %d references after its last user", inUse.refs.Load())
	}

	// Many readers and reloads at once (run with -race).
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ev := characteristics.Event{IP: netip.MustParseAddr("203.0.113.9")}
				h.Enrich(&ev)
				if ev.ASN != 64500 {
					t.Errorf("ASN %d during reloads", ev.ASN)
					return
				}
			}
		}()
	}
	for range 20 {
		h.Swap(build(t, extra))
	}
	close(stop)
	wg.Wait()
	h.Close()
}

// TestHolderReachesEnrichment: what the holder enriches with follows the
// swap (defect 2: reloads never reached the decision API's enrichment).
func TestHolderReachesEnrichment(t *testing.T) {
	h := NewHolder(build(t, "characteristics: {trusted_proxies: [192.0.2.1]}\n"))
	defer h.Close()
	ev := characteristics.Event{IP: netip.MustParseAddr("192.0.2.1"), Headers: []characteristics.Field{{Name: "x-forwarded-for", Value: "203.0.113.9"}}}
	h.Enrich(&ev)
	if ev.IP.String() != "203.0.113.9" {
		t.Fatalf("client %s, want the forwarded address", ev.IP)
	}
	h.Swap(build(t, "characteristics: {prefix_v4: 16}\n"))
	ev.IP = netip.MustParseAddr("192.0.2.1")
	h.Enrich(&ev)
	if ev.IP.String() != "192.0.2.1" || ev.Prefix.Bits() != 16 {
		t.Fatalf("after the swap: client %s prefix %s, want 192.0.2.1 in a /16", ev.IP, ev.Prefix)
	}
}

// lines is a Source of fixed lines.
type lines []string

func (ls lines) Read(ctx context.Context, w *Writer) error {
	for i, l := range ls {
		if err := w.Line([]byte(l), "test.log", int64(i+1)); err != nil {
			return err
		}
	}
	return nil
}

func logLine(ip, path string, status int, t time.Time) string {
	return fmt.Sprintf(`%s - - [%s] "POST %s HTTP/1.1" %d 12 "-" "test"`, ip, t.Format("02/Jan/2006:15:04:05 -0700"), path, status)
}

func newStore(t testing.TB) *mitigation.Store {
	s, err := mitigation.New(mitigation.Config{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var wall = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func run(t testing.TB, p *Pipeline, store Store, src Source, report *Report) (Stats, *Metrics) {
	t.Helper()
	h := NewHolder(p)
	defer h.Close()
	m := NewMetrics(nil)
	st, err := Run(context.Background(), Config{Pipelines: h, Store: store, Report: report, Metrics: m, Now: func() time.Time { return wall }}, src)
	if err != nil {
		t.Fatal(err)
	}
	return st, m
}

// TestFutureEventsClamped: lines dated ahead of the clock count at the
// clock's time (defect 6: a year ahead made year-long bans; past 2262 the
// nanoseconds overflowed).
func TestFutureEventsClamped(t *testing.T) {
	for _, ahead := range []time.Time{wall.AddDate(1, 0, 0), time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)} {
		t.Run(ahead.Format("2006"), func(t *testing.T) {
			var src lines
			for i := range 5 {
				src = append(src, logLine("203.0.113.7", "/login", 401, ahead.Add(time.Duration(i)*time.Second)))
			}
			store := newStore(t)
			st, m := run(t, build(t, ""), store, src, nil)
			if st.Future != 5 || testutil.ToFloat64(m.Future.WithLabelValues("nginx_log")) != 5 {
				t.Errorf("future events %d (metric %v), want 5", st.Future, testutil.ToFloat64(m.Future.WithLabelValues("nginx_log")))
			}
			ms := store.List(wall)
			if len(ms) != 1 {
				t.Fatalf("mitigations %v, want one", ms)
			}
			if want := wall.Add(10 * time.Minute); !ms[0].Expires.Equal(want) {
				t.Errorf("expires %s, want %s (the clock plus the timeout)", ms[0].Expires, want)
			}
		})
	}
	// Within the tolerance, the line's own time counts.
	store := newStore(t)
	var src lines
	for i := range 5 {
		src = append(src, logLine("203.0.113.8", "/login", 401, wall.Add(30*time.Second+time.Duration(i)*time.Second)))
	}
	if st, _ := run(t, build(t, ""), store, src, nil); st.Future != 0 {
		t.Errorf("%d events within the tolerance clamped", st.Future)
	}
}

// TestStoreIsTheOnlyTable: the engine reports every request over the limit;
// the store holds one mitigation, extended only when the extension matters,
// and refuses an allowlisted scope.
func TestStoreIsTheOnlyTable(t *testing.T) {
	var src lines
	for i := range 200 { // one failed login a second: over 3/min from the 4th
		src = append(src, logLine("203.0.113.7", "/login", 401, wall.Add(-time.Hour+time.Duration(i)*time.Second)))
		src = append(src, logLine("192.0.2.7", "/login", 401, wall.Add(-time.Hour+time.Duration(i)*time.Second)))
	}
	store, err := mitigation.New(mitigation.Config{Allowlist: mitigation.Allowlist{Prefixes: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rep := NewReport(true)
	h := NewHolder(build(t, ""))
	defer h.Close()
	m := NewMetrics(nil)
	st, err := Run(context.Background(), Config{Pipelines: h, Store: store, Report: rep, Metrics: m, Replay: true, Now: func() time.Time { return wall }}, src)
	if err != nil {
		t.Fatal(err)
	}
	ms := store.List(wall.Add(-time.Hour))
	if len(ms) != 1 || ms[0].Scope[0].Value != "203.0.113.7" {
		t.Fatalf("store holds %v, want the one non-allowlisted client", ms)
	}
	// 197 trips; each extension of a 10m timeout by a tenth or more: about
	// one a minute.
	if n := testutil.ToFloat64(m.Trips.WithLabelValues("login", "block")); n < 3 || n > 5 {
		t.Errorf("%v trips reached the store, want 4 (one per minute of extension)", n)
	}
	rm := rep.Mitigations()
	if len(rm) != 1 || rm[0].Trips != 197 || rm[0].Count != 197 {
		t.Fatalf("report %+v", rm)
	}
	if st.Mitigated != 197 {
		t.Errorf("%d requests mitigated, want 197", st.Mitigated)
	}
	cs := rep.Clients()
	if len(cs) != 1 || cs[0].Addr.String() != "203.0.113.7" || cs[0].Requests != 200 || cs[0].Actioned != 197 ||
		cs[0].Actions[mitigation.ActionBlock] != 197 || !cs[0].Mitigated || strings.Join(cs[0].Rules, ",") != "login" {
		t.Fatalf("clients %+v", cs)
	}
}

// TestScopeKey: the key hashed from a trip's bytes is the store's key of its
// canonical scope, so the lookup before Add finds what Add made.
func TestScopeKey(t *testing.T) {
	p := build(t, "")
	defer p.Release()
	store := newStore(t)
	var src lines
	for i := range 5 {
		src = append(src, logLine("2001:db8::7", "/login", 401, wall.Add(-time.Minute+time.Duration(i)*time.Second)))
	}
	h := NewHolder(p)
	p.refs.Add(1) // keep p for the checks below
	var trips int
	if _, err := Run(context.Background(), Config{Pipelines: h, Store: store, Now: func() time.Time { return wall }}, src); err != nil {
		t.Fatal(err)
	}
	h.Close()
	for _, m := range store.List(wall) {
		trips++
		var ev characteristics.Event
		ev.IP = netip.MustParseAddr("2001:db8::7")
		var key []byte
		for _, c := range p.rules.Rules()[0].Characteristics {
			key = append(c.AppendValue(key, &ev), 0xff)
		}
		tr := engine.Trip{Rule: p.rules.Rules()[0], KeyBytes: key}
		if got, want := scopeKey(&tr), m.Scope.Key(); got != want {
			t.Errorf("scope key %x, store key %x for %s", got, want, m.Scope)
		}
	}
	if trips != 1 {
		t.Fatalf("%d mitigations, want 1", trips)
	}
}

// TestReportAllowlistAnyScope: an allowlisted client that shares a user
// agent with an attacker is never counted as actioned by the user agent's
// mitigation, as the decision API would never act on it.
func TestReportAllowlistAnyScope(t *testing.T) {
	dir := t.TempDir()
	uaRule := strings.NewReplacer("[ip.src]", "[http.user_agent]", "test login", "test ua", "guardd.rules.login", "guardd.rules.ua").Replace(loginRule)
	os.WriteFile(filepath.Join(dir, "ua.rego"), []byte(uaRule), 0o644)
	cfg, err := config.Parse("t.yml", []byte(fmt.Sprintf("rules: {disable_builtin: true, dirs: [%q]}\n", dir)))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(cfg, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var src lines
	for i := range 10 { // the attacker trips the user agent's rule
		src = append(src, logLine("203.0.113.7", "/login", 401, wall.Add(-time.Hour+time.Duration(i)*time.Second)))
	}
	for i := range 3 { // then the allowlisted office, same user agent
		src = append(src, logLine("192.0.2.7", "/", 200, wall.Add(-time.Hour+time.Duration(20+i)*time.Second)))
	}
	store, err := mitigation.New(mitigation.Config{Allowlist: mitigation.Allowlist{Prefixes: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rep := NewReport(true)
	h := NewHolder(p)
	defer h.Close()
	if _, err := Run(context.Background(), Config{Pipelines: h, Store: store, Report: rep, Metrics: NewMetrics(nil), Replay: true, Now: func() time.Time { return wall }}, src); err != nil {
		t.Fatal(err)
	}
	cs := rep.Clients()
	if len(cs) != 1 || cs[0].Addr.String() != "203.0.113.7" {
		t.Fatalf("clients %+v, want only the attacker: the allowlisted client receives no action", cs)
	}
}

// blocks is a Source that hands lines over in blocks (Writer.Buffer and
// Block), size bytes of room at a time, every third block replaced by the
// same lines through Line.
type blocks struct {
	ls   []string
	size int
}

func (bs blocks) Read(ctx context.Context, w *Writer) error {
	for i, n := 0, 0; i < len(bs.ls); n++ {
		if n%3 == 2 {
			if err := w.Line([]byte(bs.ls[i]), "test.log", int64(i+1)); err != nil {
				return err
			}
			i++
			continue
		}
		buf, err := w.Buffer(bs.size)
		if err != nil {
			return err
		}
		if len(buf) < bs.size {
			return fmt.Errorf("Buffer(%d) gave %d bytes", bs.size, len(buf))
		}
		first, used, k := i, 0, 0
		for i < len(bs.ls) && used+len(bs.ls[i])+1 <= bs.size {
			used += copy(buf[used:], bs.ls[i])
			buf[used] = '\n'
			used++
			i, k = i+1, k+1
		}
		if err := w.Block(used, k, "test.log", int64(first+1), 1<<20); err != nil {
			return err
		}
	}
	return nil
}

// TestBlocksAsLines: lines handed over in blocks, which the workers split,
// are counted, numbered in errors and mitigated as the same lines handed
// over one by one; a Buffer larger than a batch grows it.
func TestBlocksAsLines(t *testing.T) {
	var src lines
	for i := range 3000 {
		switch {
		case i%500 == 7:
			src = append(src, "not a line")
		case i%700 == 3:
			src = append(src, "") // an empty line: malformed too
		default:
			src = append(src, logLine(fmt.Sprintf("203.0.113.%d", i%9), "/login", 401, wall.Add(-time.Duration(3000-i)*100*time.Millisecond)))
		}
	}
	want, _ := run(t, build(t, ""), newStore(t), src, NewReport(false))
	wantReport := NewReport(false)
	run(t, build(t, ""), newStore(t), src, wantReport)
	for _, size := range []int{100, 4096, 1 << 20} {
		rep := NewReport(false)
		got, _ := run(t, build(t, ""), newStore(t), blocks{src, size}, rep)
		if got.Lines != want.Lines || got.Malformed != want.Malformed || got.Events != want.Events || got.Mitigated != want.Mitigated {
			t.Fatalf("size %d: %+v, want %+v", size, got, want)
		}
		if fmt.Sprint(got.Errors) != fmt.Sprint(want.Errors) {
			t.Errorf("size %d: errors %v, want %v", size, got.Errors, want.Errors)
		}
		if g, w := rep.Mitigations(), wantReport.Mitigations(); len(g) != len(w) || len(g) == 0 || fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("size %d: mitigations %v, want %v", size, g, w)
		}
	}
}

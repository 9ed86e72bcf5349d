package loggen_test

import (
	"context"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/guardd/guardd/bench/loggen"
	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/ingest/nginxlog"
	"github.com/guardd/guardd/ingest/replay"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/rules"
	"github.com/guardd/guardd/rules/builtin"
	"github.com/guardd/guardd/rules/engine"
)

// enforcing loads the built-in library without its log-only rules: what is
// scored is what a client would have been refused.
func enforcing(t testing.TB) *rules.Set {
	t.Helper()
	all, err := rules.Builtin(rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mfs := fstest.MapFS{}
	err = fs.WalkDir(builtin.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".rego") || strings.HasSuffix(p, "_test.rego") {
			return err
		}
		if slices.ContainsFunc(all.Rules(), func(r *rules.Rule) bool { return r.File == p && r.Action == mitigation.ActionLog }) {
			return nil
		}
		b, err := fs.ReadFile(builtin.FS, p)
		mfs[p] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	set, err := rules.Load(mfs, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestClasses replays a labelled log of every attacker and benign class
// through the built-in library and prints, per class, how many of its
// client addresses got an action (any rule, any scope, log-only rules left
// out). Every attacker class must be caught, every address of it, and no
// benign address may ever be refused.
func TestClasses(t *testing.T) {
	benign := 3000
	if testing.Short() {
		benign = 600
	}
	dir := t.TempDir()
	logPath := filepath.Join(dir, "access.log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	labels, err := loggen.Generate(f, loggen.Config{Seed: 14, Benign: benign})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	db := filepath.Join(dir, "geo.mmdb")
	if err := labels.GeoDB(db); err != nil {
		t.Fatal(err)
	}
	en, err := characteristics.NewEnricher(characteristics.EnrichConfig{ASNDatabase: db})
	if err != nil {
		t.Fatal(err)
	}
	defer en.Close()
	format, err := nginxlog.Compile(loggen.GuarddLogFormat)
	if err != nil {
		t.Fatal(err)
	}
	set := enforcing(t)
	// Rules by the address or prefix they tripped on; trips on other
	// scopes (a JA4, a cookie) are listed as such.
	fired := map[string]map[string]bool{}
	eng, err := engine.New(engine.Config{Rules: set, OnTrip: func(tr engine.Trip) {
		k := "other"
		for _, f := range tr.Scope {
			if f.Name == "ip.src" || f.Name == "ip.src.prefix" {
				k = f.Value
				break
			}
		}
		if fired[k] == nil {
			fired[k] = map[string]bool{}
		}
		fired[k][tr.Rule.Name] = true
	}})
	if err != nil {
		t.Fatal(err)
	}
	actioned := map[string]int{}
	st, err := replay.Run(context.Background(), replay.Config{Engine: eng, Enricher: en, Format: format,
		OnMitigated: func(c netip.Addr, _ time.Time) { actioned[c.String()]++ }}, []string{logPath})
	if err != nil {
		t.Fatal(err)
	}
	if st.Malformed != 0 {
		t.Fatalf("%d malformed lines", st.Malformed)
	}

	var tp, fp, fn int
	var b strings.Builder
	fmt.Fprintf(&b, "%d lines, %d client addresses\n", st.Lines, len(labels.Actors))
	fmt.Fprintf(&b, "%-56s %-8s %7s %8s %9s %9s  %s\n", "class", "kind", "actors", "actioned", "recall", "precision", "rules")
	for _, c := range labels.Classes {
		hit := 0
		rs := map[string]bool{}
		for ip, cls := range labels.Actors {
			if cls != c.Name {
				continue
			}
			if actioned[ip] > 0 {
				hit++
				found := false
				for _, k := range []string{ip, prefixOf(ip)} {
					for r := range fired[k] {
						rs[r], found = true, true
					}
				}
				if !found {
					rs["(a JA4 or cookie scope)"] = true
				}
			} else if c.Attacker {
				t.Errorf("%s: attacker %s never refused", c.Name, ip)
			}
			if !c.Attacker && actioned[ip] > 0 {
				t.Errorf("%s: benign %s refused %d times (rules %v)", c.Name, ip, actioned[ip], slices.Sorted(mapsKeys(fired[ip])))
			}
		}
		kind, recall, precision := "benign", "-", "-"
		if c.Attacker {
			kind = "attacker"
			tp += hit
			fn += c.Actors - hit
			recall = fmt.Sprintf("%.3f", float64(hit)/float64(c.Actors))
			precision = "1.000" // every address of the class is the attacker's
		} else {
			fp += hit
			if hit > 0 {
				precision = "0.000"
			}
		}
		fmt.Fprintf(&b, "%-56s %-8s %7d %8d %9s %9s  %s\n", c.Name, kind, c.Actors, hit, recall, precision, strings.Join(slices.Sorted(mapsKeys(rs)), ","))
	}
	fmt.Fprintf(&b, "overall: precision %.4f (%d attacker addresses refused, %d benign), recall %.4f (%d missed)\n",
		float64(tp)/float64(max(tp+fp, 1)), tp, fp, float64(tp)/float64(max(tp+fn, 1)), fn)
	t.Log("\n" + b.String())
}

func prefixOf(ip string) string {
	a := netip.MustParseAddr(ip)
	bits := 24
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p.String()
}

func mapsKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

package loggen_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/guardd/guardd/bench/loggen"
	"github.com/guardd/guardd/config"
	"github.com/guardd/guardd/pipeline"
	"github.com/guardd/guardd/pipeline/replay"
)

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
	cfg := config.Default()
	cfg.Log.Format = loggen.GuarddLogFormat
	cfg.Characteristics.ASNDatabase = db
	p, err := pipeline.Build(cfg, pipeline.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rep := pipeline.NewReport(true)
	st, err := replay.Run(context.Background(), replay.Config{Pipeline: p, Report: rep}, []string{logPath})
	if err != nil {
		t.Fatal(err)
	}
	if st.Malformed != 0 {
		t.Fatalf("%d malformed lines", st.Malformed)
	}
	// The impact per client, as guardd replay --json --clients reports it:
	// requests refused or answered in the application's place by any
	// mitigation in force, whatever its scope (log-only rules do nothing).
	actioned := map[string]int64{}
	fired := map[string][]string{}
	for _, c := range rep.Clients() {
		actioned[c.Addr.String()] = c.Actioned
		fired[c.Addr.String()] = c.Rules
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
				for _, r := range fired[ip] {
					rs[r] = true
				}
			} else if c.Attacker {
				t.Errorf("%s: attacker %s never refused", c.Name, ip)
			}
			if !c.Attacker && actioned[ip] > 0 {
				t.Errorf("%s: benign %s refused %d times (rules %v)", c.Name, ip, actioned[ip], fired[ip])
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

func mapsKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

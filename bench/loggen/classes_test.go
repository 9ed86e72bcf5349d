package loggen_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/guardd/guardd/bench/loggen"
	"github.com/guardd/guardd/config"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/pipeline"
	"github.com/guardd/guardd/pipeline/replay"
)

// TestClasses replays a labelled log of every attacker and benign class
// through the built-in library and prints, per class, how many of its
// client addresses got an action (any rule, any scope, log-only rules left
// out), and how many only ever a challenge. Every attacker class must be
// actioned for at least 95% of its addresses; no benign address may be
// refused, throttled or answered in the application's place; a challenge
// is friction for a person's browser, allowed for at most 2% of benign
// browsers, and harm for a client that cannot run one (NonBrowser).
func TestClasses(t *testing.T) {
	benign := 3000
	if testing.Short() {
		benign = 600
	}
	seed := uint64(14)
	if s := os.Getenv("GUARDD_LOGGEN_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("GUARDD_LOGGEN_SEED=%q: %v", s, err)
		}
		seed = n
	}
	dir := t.TempDir()
	logPath := filepath.Join(dir, "access.log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	labels, err := loggen.Generate(f, loggen.Config{Seed: seed, Benign: benign})
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
	// requests refused, challenged or answered in the application's place by
	// any mitigation in force, whatever its scope (log-only rules do nothing).
	actioned := map[string]int64{}
	challenged := map[string]int64{}
	fired := map[string][]string{}
	for _, c := range rep.Clients() {
		actioned[c.Addr.String()] = c.Actioned
		challenged[c.Addr.String()] = c.Actions[mitigation.ActionChallenge]
		fired[c.Addr.String()] = c.Rules
	}

	var tp, fp, fn, browsers, friction int
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d, %d lines, %d client addresses\n", seed, st.Lines, len(labels.Actors))
	fmt.Fprintf(&b, "%-56s %-8s %7s %8s %10s %9s %9s  %s\n", "class", "kind", "actors", "actioned", "challenged", "recall", "precision", "rules")
	for _, c := range labels.Classes {
		hit, chal := 0, 0
		rs := map[string]bool{}
		var missed []string
		for ip, cls := range labels.Actors {
			if cls != c.Name {
				continue
			}
			n := actioned[ip]
			if n > 0 {
				hit++
				for _, r := range fired[ip] {
					rs[r] = true
				}
			} else if c.Attacker {
				missed = append(missed, ip)
			}
			onlyChallenged := n > 0 && challenged[ip] == n
			if onlyChallenged {
				chal++
			}
			if c.Attacker {
				continue
			}
			switch {
			case n == 0:
			case onlyChallenged && !loggen.NonBrowser[c.Name]:
				friction++
			default:
				t.Errorf("%s: benign %s refused %d times (%d challenged; rules %v)", c.Name, ip, n, challenged[ip], fired[ip])
			}
		}
		kind, recall, precision := "benign", "-", "-"
		if c.Attacker {
			kind = "attacker"
			tp += hit
			fn += c.Actors - hit
			r := float64(hit) / float64(c.Actors)
			recall = fmt.Sprintf("%.3f", r)
			precision = "1.000" // every address of the class is the attacker's
			if r < 0.95 {
				slices.Sort(missed)
				t.Errorf("%s: %d of %d addresses actioned (%.3f < 0.95); missed %v", c.Name, hit, c.Actors, r, missed[:min(len(missed), 10)])
			}
		} else {
			if !loggen.NonBrowser[c.Name] {
				browsers += c.Actors
			}
			fp += hit - chal
			if hit > chal {
				precision = "0.000"
			}
		}
		fmt.Fprintf(&b, "%-56s %-8s %7d %8d %10d %9s %9s  %s\n", c.Name, kind, c.Actors, hit, chal, recall, precision, strings.Join(slices.Sorted(mapsKeys(rs)), ","))
	}
	fmt.Fprintf(&b, "overall: precision %.4f (%d attacker addresses actioned, %d benign refused), recall %.4f (%d missed); %d of %d benign browsers challenged (%.2f%%)\n",
		float64(tp)/float64(max(tp+fp, 1)), tp, fp, float64(tp)/float64(max(tp+fn, 1)), fn, friction, browsers, 100*float64(friction)/float64(max(browsers, 1)))
	t.Log("\n" + b.String())
	if float64(friction) > 0.02*float64(browsers) {
		t.Errorf("%d of %d benign browsers challenged: more than 2%%", friction, browsers)
	}
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

#!/usr/bin/env bash
# Compares counting.Table's Add between a commit and the working tree in one
# process: REV's counting package is copied, renamed, beside the working
# tree's, and one test binary runs both tables chunk by chunk (CHUNK Adds
# on one, then on the other, the order flipped every round), each over its
# own KEYS keys in a fixed cycle, after four passes over the keys to grow
# them. It prints, per run, each table's median ns/op over the ROUNDS
# rounds and the median and geometric mean of the per-round ratios
# (working tree / REV).
#
#   bench/table-ab.sh b4f44da
#   KEYS=1048576 RUNS=5 bench/table-ab.sh b4f44da
#
# Why in one process: on a shared machine the time of a table larger than
# L2 swings by half from run to run (the L3 and memory are the
# neighbours' too), so two binaries timed in turn differ by more than
# any change in the table. Chunks a few milliseconds apart see the same
# neighbours. Both tables are in memory at once, so each has the caches
# half as much as in BenchmarkTableAdd: compare ratios, not ns/op, with
# that benchmark.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: $0 REV" >&2; exit 2; }
rev=$(git rev-parse --short "$1")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The working tree as it is (tracked files, changes included), and REV's
# counting package as counting/abold.
git ls-files -z | while IFS= read -r -d '' f; do if [ -e "$f" ]; then cp --parents "$f" "$tmp"; fi; done
mkdir -p "$tmp/counting/abold" "$tmp/abrev"
git archive "$rev" counting | tar -x -C "$tmp/abrev"
for f in "$tmp"/abrev/counting/*.go; do
  case $f in *_test.go) continue ;; esac
  sed 's/^package counting$/package abold/' "$f" > "$tmp/counting/abold/$(basename "$f")"
done
cat > "$tmp/counting/abold/ab_test.go" <<'EOF'
package abold_test

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/guardd/guardd/counting"
	"github.com/guardd/guardd/counting/abold"
)

func env(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func TestInterleaved(t *testing.T) {
	rounds, chunk, keys := env("ROUNDS", 2000), env("CHUNK", 20000), uint64(env("KEYS", 1<<16))
	limit := 1e12 // never exceeded: the found path of every Add
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	newT, err := counting.NewTable(counting.Config{Limit: counting.Limit{Period: time.Minute, Requests: limit}})
	if err != nil {
		t.Fatal(err)
	}
	oldT, err := abold.NewTable(abold.Config{Limit: abold.Limit{Period: time.Minute, Requests: limit}})
	if err != nil {
		t.Fatal(err)
	}
	// Two loops written out, not one over a func value: each calls its
	// table's Add directly, as BenchmarkTableAdd does.
	var ni, oi uint64
	runNew := func(n int) time.Duration {
		start := time.Now()
		for range n {
			newT.Add(ni%keys*0x9e3779b97f4a7c15, 1, now)
			ni++
		}
		return time.Since(start)
	}
	runOld := func(n int) time.Duration {
		start := time.Now()
		for range n {
			oldT.Add(oi%keys*0x9e3779b97f4a7c15, 1, now)
			oi++
		}
		return time.Since(start)
	}
	runOld(int(keys) * 4)
	runNew(int(keys) * 4)
	var ratios, olds, news []float64
	var logSum float64
	for r := range rounds {
		var o, n time.Duration
		if r%2 == 0 {
			o = runOld(chunk)
			n = runNew(chunk)
		} else {
			n = runNew(chunk)
			o = runOld(chunk)
		}
		on, nn := float64(o)/float64(chunk), float64(n)/float64(chunk)
		ratios, olds, news = append(ratios, nn/on), append(olds, on), append(news, nn)
		logSum += math.Log(nn / on)
	}
	slices.Sort(ratios)
	slices.Sort(olds)
	slices.Sort(news)
	q := func(s []float64, p float64) float64 { return s[int(p*float64(len(s)-1))] }
	fmt.Printf("ns/op median: REV %.1f, working tree %.1f; per-round ratio median %.3f (q1 %.3f, q3 %.3f), geomean %.3f\n",
		q(olds, .5), q(news, .5), q(ratios, .5), q(ratios, .25), q(ratios, .75), math.Exp(logSum/float64(rounds)))
}
EOF
(cd "$tmp" && go test -c -o "$tmp/ab.test" ./counting/abold)
echo "date: $(date -u '+%F %T UTC'); load average $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
echo "REV $rev against the working tree ($(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo '+dirty')): counting.Table Add, keys ${KEYS:-65536}, ${ROUNDS:-2000} rounds of ${CHUNK:-20000} Adds, GOMAXPROCS=1"
for run in $(seq "${RUNS:-3}"); do
  GOMAXPROCS=1 "$tmp/ab.test" -test.run '^TestInterleaved$' | grep '^ns/op'
done

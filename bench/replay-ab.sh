#!/usr/bin/env bash
# Compares the CPU cost of `guardd replay` between commits, same run,
# alternated: builds guardd at each REV (the working tree for "."), then runs
# each binary in turn over the benchmark log of bench/replay.sh (1,000,000
# combined lines by default), ROUNDS times, and prints every run's user+sys
# CPU seconds, the median and its ratio to the first REV's.
#
#   bench/replay-ab.sh d3f18e4 main .
#   ROUNDS=7 LINES=100000 bench/replay-ab.sh d3f18e4 .
#   INSTR=3 bench/replay-ab.sh d3f18e4 .    # also instructions, 3 alternated
#                                           # runs per binary under valgrind
#                                           # (cachegrind, GOMAXPROCS=1): median
#
# On a busy machine only the same run's ratios mean anything: wall time and
# the CPU of one run swing with the load. Instruction counts swing less, but
# still by a few per cent (the runtime's spinning and the GC's timing count),
# and they do not see cache misses.
# The log is generated once with the working tree's bench/cmd/loggen and
# cached under bench/out/ (git ignores it); binaries and outputs go to a
# temporary directory, removed at the end. The mitigations each binary
# printed are counted, so that a change that alters detection shows.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 REV... (. is the working tree)" >&2; exit 2; }
rounds=${ROUNDS:-5}
lines=${LINES:-1000000}
out=bench/out
mkdir -p "$out"
log=$out/access-$lines.log
if [ ! -s "$log" ]; then
  go run ./bench/cmd/loggen -benign $(( lines / 110 )) -duration 6h -format combined \
    -o "$log.tmp" -labels "$out/access-$lines.labels.json" -mmdb "$out/access-$lines.mmdb"
  head -n "$lines" "$log.tmp" > "$log" && rm -f "$log.tmp"
fi
tmp=$(mktemp -d)
trap 'for w in "$tmp"/wt-*; do [ -d "$w" ] && git worktree remove --force "$w"; done; rm -rf "$tmp"' EXIT

names=()
for rev in "$@"; do
  i=${#names[@]}
  if [ "$rev" = . ]; then
    name="working-tree($(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . || echo '+dirty'))"
    go build -o "$tmp/guardd-$i" ./cmd/guardd
  else
    name=$(git rev-parse --short "$rev")
    git worktree add --detach "$tmp/wt-$i" "$rev" >/dev/null 2>&1
    (cd "$tmp/wt-$i" && go build -o "$tmp/guardd-$i" ./cmd/guardd)
  fi
  names+=("$name")
done

cat "$log" > /dev/null # the page cache warm for every binary alike
echo "date: $(date -u '+%F %T UTC'); load average $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; log $log ($(wc -l < "$log") lines)"
echo "command: guardd replay --progress never --json $log   (user+sys CPU s from /usr/bin/time, $rounds rounds, binaries alternated)"
for r in $(seq "$rounds"); do
  for i in "${!names[@]}"; do
    /usr/bin/time -f '%U %S' -o "$tmp/time" "$tmp/guardd-$i" replay --progress never --json "$log" > "$tmp/out-$i" 2> /dev/null
    awk '{printf "%.2f\n", $1 + $2}' "$tmp/time" >> "$tmp/cpu-$i"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
base=''
for i in "${!names[@]}"; do
  med=$(sort -n "$tmp/cpu-$i" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')
  [ -n "$base" ] || base=$med
  printf '%-28s runs %s  median %.2f  ratio %.3f  mitigations %d\n' "${names[$i]}" \
    "$(tr '\n' ' ' < "$tmp/cpu-$i")" "$med" "$(awk -v m="$med" -v b="$base" 'BEGIN{print m / b}')" "$(grep -c . "$tmp/out-$i" || true)"
done
if [ "${INSTR:-0}" != 0 ] && command -v valgrind > /dev/null; then
  for r in $(seq "$INSTR"); do
    for i in "${!names[@]}"; do
      GOMAXPROCS=1 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$tmp/guardd-$i" replay --progress never --json "$log" 2>&1 >/dev/null |
        sed -n 's/.*I *refs: *\([0-9,]*\).*/\1/p' | tr -d , >> "$tmp/instr-$i"
    done
  done
  first=''
  for i in "${!names[@]}"; do
    n=$(sort -n "$tmp/instr-$i" | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')
    [ -n "$first" ] || first=$n
    printf '%-28s instructions %s  median %d  ratio %.3f\n' "${names[$i]}" "$(tr '\n' ' ' < "$tmp/instr-$i")" "$n" \
      "$(awk -v n="$n" -v b="$first" 'BEGIN{print n / b}')"
  done
fi

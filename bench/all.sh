#!/usr/bin/env bash
# Runs the headline benchmarks one after another (run it on an otherwise idle
# machine) and prints what BENCHMARKS.md quotes. Output also goes to
# bench/out/all.txt. Each section names the command it ran.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/out
exec > >(tee bench/out/all.txt) 2>&1
section() { echo; echo "=== $* ($(date -u +%H:%M:%S), load $(cut -d' ' -f1 /proc/loadavg))"; }
cpu() { # command... : runs it, prints wall and CPU seconds
  /usr/bin/time -f '  wall %e s, cpu %U+%S s, max RSS %M KB' "$@"
}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), $(go version), commit $(git rev-parse --short HEAD)"

section "counting: Add over 1M keys, beside a sharded map and x/time/rate"
go test ./counting -run '^$' -bench 'BenchmarkAdd$' -benchtime 3000000x -count 1 2>&1 | grep -E 'Benchmark|ok'
# Each iteration fills a table with 1M keys: one is enough.
go test ./counting -run '^$' -bench 'BenchmarkBytesPerKey' -benchtime 1x -count 1 2>&1 | grep -E 'Benchmark|ok'

section "rules: Set.Eval of the built-in library, beside full OPA evaluation"
go test ./rules -run '^$' -bench 'BenchmarkEvalBuiltin$' -benchtime 2000000x -count 3 2>&1 | grep -E 'Benchmark'
go test ./rules -run '^$' -bench 'BenchmarkEvalOPA$' -benchtime 2000x -count 1 2>&1 | grep -E 'Benchmark'

section "nginxlog: parse a combined line"
go test ./ingest/nginxlog -run '^$' -bench 'BenchmarkParseCombined$' -benchtime 2000000x -count 3 2>&1 | grep -E 'Benchmark'

section "mitigation: Lookup in a 100,000-entry table"
go test ./mitigation -run '^$' -bench 'Lookup' -benchtime 2000000x -count 1 2>&1 | grep -E 'Benchmark' | head -8

section "decision: Decide (in process, 100,000 mitigations)"
go test ./mitigation/decision -run '^$' -bench 'BenchmarkDecide' -benchtime 2000000x -count 3 2>&1 | grep -E 'Benchmark'

section "sniff: packets per second through decode and flow tracking, one core"
go test ./ingest/sniff -run '^$' -bench 'HandlePacket' -cpu 1 -count 3 2>&1 | grep -E 'Benchmark'

section "crowdsec: startup=true with 100,000 decisions"
go test ./mitigation/crowdsec -run '^$' -bench 'StreamStartup' -benchtime 10x -count 1 2>&1 | grep -E 'Benchmark'

section "replay: 1,000,000-line combined log, built-in rules"
go build -o bench/out/guardd ./cmd/guardd
log=bench/out/access-1000000.log
[ -s "$log" ] || go run ./bench/cmd/loggen -benign 8700 -duration 6h -format combined -o "$log"
cat "$log" > /dev/null
echo "  $(wc -l < "$log") lines"
for i in 1 2 3; do cpu bench/out/guardd replay --progress never "$log" > /dev/null; done
echo "  peer, awk|sort|uniq (floor):"
cpu bash -c "awk '{print \$1}' $log | sort | uniq -c > /dev/null"
if command -v goaccess >/dev/null; then
  echo "  peer, goaccess:"
  cpu goaccess "$log" --log-format=COMBINED --no-global-config --no-progress -o bench/out/goaccess.json
fi

section "guardd fingerprint beside tshark on the same capture"
bash bench/fingerprint.sh 2>&1 | tail -12

section "decision API under wrk"
bash bench/decision.sh 10s 2>&1 | grep -vE "^go: |loaded"

section "ban latency"
bash bench/banlatency.sh 100000 2>&1 | tail -2

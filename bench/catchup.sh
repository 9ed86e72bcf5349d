#!/usr/bin/env bash
# Live catch-up against replay, on one file in one run (issue 10, defect 9):
# a burst of LINES log lines (default 10,000,000), each from a distinct client
# address, is
#   - replayed:        guardd replay FILE
#   - caught up live:  guardd run following FILE from its start; the time is
#                      from the start of the process until
#                      guardd_ingest_events_total reaches LINES (polled every
#                      100 ms on the admin API's /metrics, so it is up to
#                      100 ms long)
# and lines/s of each is printed with their ratio. Target: live >= half of
# replay.
#
#   bench/catchup.sh [LINES]
#   GUARDD=/path/to/guardd bench/catchup.sh   measures that build instead
#
# The log goes to bench/out/ (ignored by git), dated now so that live
# counting takes the lines at their own time; the daemon listens on loopback
# ports 19480/19481 and keeps its state in a temporary directory. Only the
# guardd it started is killed, by PID.
set -euo pipefail
cd "$(dirname "$0")/.."
lines=${1:-10000000}
out=bench/out/catchup
mkdir -p "$out"
log=$out/burst-$lines.log
if [ -n "${GUARDD:-}" ]; then cp "$GUARDD" "$out/guardd"; else go build -o "$out/guardd" ./cmd/guardd; fi
if [ ! -s "$log" ]; then
  # 10.0.0.0/8 holds 16.7 million addresses: one per line.
  awk -v n="$lines" -v t="$(date -u '+%d/%b/%Y:%H:%M:%S +0000')" 'BEGIN {
    for (i = 0; i < n; i++)
      printf "10.%d.%d.%d - - [%s] \"GET /item/%d HTTP/1.1\" 200 512 \"-\" \"Mozilla/5.0\"\n", int(i/65536)%256, int(i/256)%256, i%256, t, i%1000
  }' > "$log"
fi
cat "$log" > /dev/null # warm the page cache for both alike
echo "date: $(date -u '+%F %T UTC'); $lines lines, $(du -h "$log" | cut -f1); $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"

replay() {
  local rate
  rate=$("$out/guardd" replay --progress never "$log" 2>&1 >/dev/null | grep -o '[0-9]* lines/s' | cut -d' ' -f1)
  echo "$rate"
}

live() {
  local state; state=$(mktemp -d)
  cat > "$state/guardd.yaml" <<YAML
sources: {nginx: {paths: ["$PWD/$log"], from_start: true}}
decision: {listen: 127.0.0.1:19480}
admin: {listen: 127.0.0.1:19481}
mitigation: {state_dir: "$state"}
YAML
  local start end n=0 pid
  start=$(date +%s.%N)
  "$out/guardd" run --config "$state/guardd.yaml" --log-level error 2> "$state/guardd.log" &
  pid=$!
  while [ "$n" -lt "$lines" ]; do
    sleep 0.1
    kill -0 "$pid" 2>/dev/null || { echo "guardd died: $(tail -3 "$state/guardd.log")" >&2; return 1; }
    n=$(curl -sf http://127.0.0.1:19481/metrics | awk '/^guardd_ingest_events_total\{source="nginx_log"\}/ {printf "%d", $2}')
    n=${n:-0}
  done
  end=$(date +%s.%N)
  kill "$pid"; wait "$pid" || true
  rm -rf "$state"
  awk -v n="$lines" -v s="$start" -v e="$end" 'BEGIN { printf "%d", n / (e - s) }'
}

r=$(replay); l=$(live)
echo "replay: $r lines/s"
echo "live catch-up: $l lines/s"
awk -v r="$r" -v l="$l" 'BEGIN { printf "live / replay: %.2f (target >= 0.50)\n", l / r }'

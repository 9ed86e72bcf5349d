#!/usr/bin/env bash
# Live heap per active mitigation in the daemon: `guardd run` on loopback
# (built-in rules, state journaled), its live heap read after a forced
# collection (/debug/pprof/heap?gc=1) when empty, after N mitigations added
# through the admin API, and after N more made by the rules from log lines
# (one sqlmap request each from N distinct addresses: scanner_ua trips on
# one). Prints bytes per mitigation for each step, beside the empty daemon.
# Ports 19490-19491 on 127.0.0.1.
#
#   bench/mitigation-memory.sh [N]    default 100000
#
# The store alone: go test -run XXX -bench MemoryPerMitigation ./mitigation
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100000}
out=$PWD/bench/out/mitigation-memory
rm -rf "$out"; mkdir -p "$out"
. bench/lib.sh
start_guardd "$out" 19490 19491
trap 'kill "$gpid" 2>/dev/null || true; wait "$gpid" 2>/dev/null || true' EXIT
token=$(cat "$out/state/admin.token")
api() { curl -sf -H "Authorization: Bearer $token" "http://127.0.0.1:19491$1"; }
# HeapAlloc after a full collection: the live heap.
heap() { api '/debug/pprof/heap?gc=1&debug=1' | sed -n 's/^# HeapAlloc = //p'; }
rss() { awk '/^VmRSS/ {print $2 * 1024}' "/proc/$gpid/status"; }
active() { api /metrics | awk '/^guardd_mitigation_active\{/ {s += $2} END {print s + 0}'; }
wait_active() {
  for _ in $(seq 600); do [ "$(active)" -ge "$1" ] && return 0; sleep 0.5; done
  echo "the daemon holds $(active) mitigations, want $1" >&2; return 1
}
per() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN {printf "%.0f", (b - a) / n}'; }

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%F %H:%M') UTC, commit $(git rev-parse --short HEAD)"
h0=$(heap); r0=$(rss)
echo "empty daemon: live heap $h0 B, RSS $r0 B"

"$out/daemonbench" load -admin 127.0.0.1:19491 -token "$out/state/admin.token" -n "$n"
wait_active "$n"
h1=$(heap); r1=$(rss)
echo "$n manual mitigations (admin API): live heap $h1 B, RSS $r1 B: $(per "$h0" "$h1" "$n") B of live heap per mitigation, $(per "$r0" "$r1" "$n") B RSS"

# N sqlmap requests from 100.64.0.0/10, dated now: each trips scanner_ua.
ts=$(LC_ALL=C date -u '+%d/%b/%Y:%H:%M:%S +0000')
awk -v n="$n" -v ts="$ts" 'BEGIN {
  for (i = 0; i < n; i++)
    printf "100.%d.%d.%d - - [%s] \"GET /index.php?id=1 HTTP/1.1\" 200 512 \"-\" \"sqlmap/1.7.2#stable (https://sqlmap.org)\"\n",
      64 + int(i / 65536) % 64, int(i / 256) % 256, i % 256, ts
}' >> "$out/access.log"
wait_active $((2 * n))
h2=$(heap); r2=$(rss)
echo "$n more from rules (log lines): live heap $h2 B, RSS $r2 B: $(per "$h1" "$h2" "$n") B of live heap per rule mitigation (counters and all), $(per "$h0" "$h2" $((2 * n))) B per mitigation over both"
# Where it goes: go tool pprof -sample_index=inuse_space -top bench/out/mitigation-memory/guardd bench/out/mitigation-memory/heap.pb.gz
api '/debug/pprof/heap?gc=1' > "$out/heap.pb.gz"

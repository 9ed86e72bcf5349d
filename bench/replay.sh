#!/usr/bin/env bash
# Benchmarks `guardd replay` on a 1,000,000-line combined log with the built-in
# rules, beside the peers measured on the same file in the same run:
#   - awk '{print $1}' | sort | uniq -c  (the floor: reading and counting only)
#   - goaccess (Debian package)          (a log analyser, no rules)
#   - CrowdSec replay mode (Debian package, crowdsecurity/nginx collection if the
#     hub has it offline)
# Prints wall time, lines/s and peak RSS of each. Installs goaccess and crowdsec
# when absent (as root, services kept from starting).
#
#   bench/replay.sh [LINES]      default 1000000
set -euo pipefail
cd "$(dirname "$0")/.."
lines=${1:-1000000}
out=bench/out
mkdir -p "$out"
export DEBIAN_FRONTEND=noninteractive

if [ "$(id -u)" = 0 ]; then
  miss=()
  command -v goaccess >/dev/null || miss+=(goaccess)
  command -v crowdsec >/dev/null || miss+=(crowdsec)
  if [ ${#miss[@]} -gt 0 ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    apt-get update -qq && apt-get install -y -qq "${miss[@]}" >/dev/null
  fi
fi

go build -o "$out/guardd" ./cmd/guardd
log=$out/access-$lines.log
if [ ! -s "$log" ]; then
  # ~115 lines per benign client, plus the attack campaigns.
  go run ./bench/loggen -benign $(( (lines - 10000) / 115 )) -duration 6h -format combined -o "$log"
fi
n=$(wc -l < "$log")
echo "log: $log, $n lines, $(du -h "$log" | cut -f1)"
cat "$log" > /dev/null # warm the page cache for everyone alike

measure() { # name, command...
  local name=$1; shift
  local best= rss=
  for _ in 1 2 3; do
    /usr/bin/time -f '%e %M' -o "$out/time.txt" "$@" > "$out/$name.out" 2> "$out/$name.err" || { echo "$name failed:"; tail -5 "$out/$name.err"; return; }
    read -r secs kb < "$out/time.txt"
    if [ -z "$best" ] || awk "BEGIN{exit !($secs < $best)}"; then best=$secs; rss=$kb; fi
  done
  awk -v n="$n" -v s="$best" -v kb="$rss" -v name="$name" \
    'BEGIN{printf "%-28s %8.2f s %12.0f lines/s %8.1f MB peak RSS\n", name, s, n/s, kb/1024}'
}

echo "machine: $(nproc) cores, $(uname -r), $(date -u +%F)"
measure "awk|sort|uniq (floor)" bash -c "awk '{print \$1}' '$log' | sort | uniq -c > /dev/null"
measure "guardd replay" "$out/guardd" replay --progress never "$log"
if command -v goaccess >/dev/null; then
  measure "goaccess 1.7" goaccess "$log" --log-format=COMBINED --no-global-config -o "$out/goaccess.json"
fi
if command -v crowdsec >/dev/null && [ -d /etc/crowdsec ]; then
  if cscli parsers list 2>/dev/null | grep -q nginx-logs; then
    measure "crowdsec replay" crowdsec -c /etc/crowdsec/config.yaml -dsn "file://$PWD/$log" -type nginx -no-api
  else
    echo "crowdsec: the nginx parsers are not installed and the hub cannot be reached offline; not measured"
  fi
fi
echo "guardd mitigations: $(grep -c . "$out/guardd replay.out" || true) lines of output"

#!/usr/bin/env bash
# Fleet mode benchmarks (BENCHMARKS.md, "Fleet mode"): starts its own
# redis-server on a free 127.0.0.1 port for each measurement and kills it
# by PID. Needs redis-server (scripts/test.sh installs it).
#
#   bench/fleet.sh [DURATION]     default 5s per throughput/latency run
set -euo pipefail
cd "$(dirname "$0")/.."
d=${1:-5s}
go build -o /tmp/guardd-fleetbench ./bench/fleetbench
echo "== $(date -u +%H:%M) load: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
/tmp/guardd-fleetbench -d "$d" throughput single propagation latency
/tmp/guardd-fleetbench accuracy
# The same with a deadline this busy machine meets: the scheme itself,
# without the breaker opening on scheduling delays.
/tmp/guardd-fleetbench -deadline 250ms -d "$d" throughput accuracy

#!/usr/bin/env bash
# Benchmarks ban latency: `guardd run` tails a log that a background writer
# fills with 100,000 benign lines per second; an attacker's burst of failed
# logins is written, and we time from the write of the line that trips the
# built-in login_bruteforce rule to the decision API denying that attacker.
#
#   bench/banlatency.sh [RATE]    default 100000 lines/s
set -euo pipefail
cd "$(dirname "$0")/.."
rate=${1:-100000}
out=$PWD/bench/out/banlatency
rm -rf "$out"; mkdir -p "$out"
. bench/lib.sh
start_guardd "$out" 19490 19491
trap 'kill $gpid 2>/dev/null || true; wait $gpid 2>/dev/null || true' EXIT
echo "machine: $(nproc) cores, $(date -u +%F)"
# login_bruteforce: more than 20 failed logins in 5 minutes; 21 trips it.
"$out/daemonbench" latency -log "$out/access.log" -decide 127.0.0.1:19490 -rate "$rate" -rounds 20 -burst 21

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
go build -o "$out/guardd" ./cmd/guardd
go build -o "$out/daemonbench" ./bench/daemonbench
: > "$out/access.log"
cat > "$out/guardd.yaml" <<YAML
sources: {nginx: {paths: ["$out/access.log"]}}
decision: {listen: 127.0.0.1:19490}
admin: {listen: 127.0.0.1:19491}
mitigation: {state_dir: "$out/state"}
YAML
"$out/guardd" run --config "$out/guardd.yaml" --log-level warn 2> "$out/guardd.log" &
gpid=$!
trap 'kill $gpid 2>/dev/null || true; wait $gpid 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -sf http://127.0.0.1:19491/healthz >/dev/null && break; sleep 0.1; done
echo "machine: $(nproc) cores, $(date -u +%F)"
# login_bruteforce: more than 20 failed logins in 5 minutes; 21 trips it.
"$out/daemonbench" latency -log "$out/access.log" -decide 127.0.0.1:19490 -rate "$rate" -rounds 20 -burst 21

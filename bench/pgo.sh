#!/usr/bin/env bash
# Regenerates cmd/guardd/default.pgo, the CPU profile `go build` uses for
# profile-guided optimisation of the guardd binary (Go's -pgo=auto: a
# default.pgo beside a main package is used by every build of it).
#
# The profile is BenchmarkReplay's: a generated combined log replayed with
# the built-in rules, rule loading included. That is the daemon's pipeline
# too (read, parse, enrich, evaluate, key, count), which is why one profile
# serves both. Regenerate it after a change that moves where the pipeline
# spends its time, and compare before and after with bench/replay.sh; an
# old profile never makes a build wrong, only less optimised.
#
#   bench/pgo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# -o keeps the test binary out of the tree.
go test -run '^$' -bench 'BenchmarkReplay$' -benchtime 20x -o "$tmp/replay.test" \
  -cpuprofile "$tmp/cpu.pprof" ./pipeline/replay
cp "$tmp/cpu.pprof" cmd/guardd/default.pgo
echo "wrote cmd/guardd/default.pgo ($(wc -c < cmd/guardd/default.pgo) bytes)"

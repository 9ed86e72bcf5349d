#!/usr/bin/env bash
# Single node, fleet mode on against off (BENCHMARKS.md "Fleet mode: one
# node"): the decision API with bench/throttle.sh's two throttle rules, wrk
# against two `guardd run`s started side by side — one without a fleet
# section, one with `fleet:` on a local redis-server — measured alternately
# (off, on, off, on, ...) in one run, so load from other work on the machine
# falls on both alike. 100,000 distinct client addresses (a warm-up puts them
# all in both rules' counters, and in Redis for the fleet node, and waits for
# the fleet node's flushes to settle), one request in ten
# from 100 hot addresses that get refused. Prints each run and the ratio of
# the medians. Needs wrk and redis-server (scripts/test.sh installs both).
# Ports 19500-19505 on 127.0.0.1; every process started is killed by PID.
#
#   bench/fleetnode.sh [DURATION] [ROUNDS]    default 5s, 3 rounds
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-5s}
rounds=${2:-3}
out=$PWD/bench/out/fleetnode
rm -rf "$out"; mkdir -p "$out/rules"
go build -o "$out/guardd" ./cmd/guardd
cat > "$out/rules/api.rego" <<'REGO'
# METADATA
# title: API burst per client
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 60
#   action: throttle
#   algorithm: gcra
#   burst: 10
package guardd.rules.api_burst

count if startswith(input.http.path, "/api/")
REGO
cat > "$out/rules/site.rego" <<'REGO'
# METADATA
# title: Requests per client
# custom:
#   characteristics: [ip.src]
#   period: 10m
#   requests_per_period: 600
#   action: throttle
package guardd.rules.site

count if true
REGO
redis-server --bind 127.0.0.1 --port 19505 --save '' --appendonly no --dir "$out" > "$out/redis.log" 2>&1 &
rpid=$!
pids=("$rpid")
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait "${pids[@]}" 2>/dev/null || true; }
trap cleanup EXIT
for _ in $(seq 100); do redis-cli -p 19505 ping >/dev/null 2>&1 && break; sleep 0.1; done
# start NAME DECIDE_PORT ADMIN_PORT [FLEET_YAML]
start() {
  mkdir -p "$out/$1"; : > "$out/$1/access.log"
  cat > "$out/$1/guardd.yaml" <<YAML
sources: {nginx: {paths: ["$out/$1/access.log"]}}
decision: {listen: 127.0.0.1:$2}
admin: {listen: 127.0.0.1:$3}
rules: {dirs: ["$out/rules"]}
counting: {max_keys: 300000}
mitigation: {state_dir: "$out/$1/state"}
${4:-}
YAML
  GOMAXPROCS=${GOMAXPROCS:-$(nproc)} "$out/guardd" run --config "$out/$1/guardd.yaml" --log-level warn 2> "$out/$1/guardd.log" &
  pids+=("$!")
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$3/healthz" >/dev/null && return; sleep 0.1; done
  echo "guardd $1 did not start:"; cat "$out/$1/guardd.log"; exit 1
}
start off 19500 19501
start on 19502 19503 "fleet: {node: bench-1, redis: {addresses: [\"127.0.0.1:19505\"]}}"

cat > "$out/decide.lua" <<'LUA'
local n = 0
request = function()
  n = n + 1
  local ip
  if n % 10 == 0 then ip = string.format("172.16.0.%d", (n / 10) % 100)
  else local k = n % 100000; ip = string.format("10.%d.%d.%d", k / 65536, (k / 256) % 256, k % 256) end
  local path = "/api/items/" .. (n % 5000)
  if n % 3 == 0 then path = "/product/" .. (n % 5000) end
  return wrk.format("GET", "/v1/decide", {["X-Real-IP"] = ip, ["X-Original-Method"] = "GET",
    ["X-Original-URI"] = path, ["User-Agent"] = "Mozilla/5.0", ["Cookie"] = "session=s" .. n})
end
LUA
echo "machine: $(nproc) cores, $(date -u +'%F %H:%M'), load $(cut -d' ' -f1-3 /proc/loadavg), wrk -t1 -c32 -d$dur, commit $(git rev-parse --short HEAD)"
# Three passes over the clients: a client's path alternates between /api/
# and /product/ from one pass to the next (100,000 = 1 mod 3), so it takes
# three for every client to be counted by both rules. With one pass, a
# third of the clients were new to the api rule in the first measured
# round: a first grant each on the fleet node, in that round only.
echo "== warm-up: 300,000 requests on each node"
for port in 19500 19502; do
  wrk -t1 -c32 -d30s -s "$out/decide.lua" "http://127.0.0.1:$port/v1/decide" >/dev/null &
  wpid=$!
  for _ in $(seq 600); do
    n=$(curl -s "http://127.0.0.1:$((port + 1))/metrics" | awk '/^guardd_decision_requests_total/ {s += $2} END {print s+0}')
    [ "${n%.*}" -ge 300000 ] && break
    sleep 0.1
  done
  kill $wpid 2>/dev/null || true; wait $wpid 2>/dev/null || true
done
declare -A rps cpus all
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; } # clock ticks, user + system
hz=$(getconf CLK_TCK)
# fleet: the fleet node's scripts and flushes so far (a Redis round trip
# each), to report per request.
fleet() { curl -s http://127.0.0.1:19503/metrics | awk '/^guardd_counting_redis_keys_flushed_total/ {k = $2} /^guardd_counting_redis_flushes_total\{outcome="ok"\}/ {f = $2} /^guardd_counting_redis_decisions_total\{mode="lease_wait"\}/ {w = $2} END {printf "%d %d %d", k, f, w}'; }
# The warm-up's new keys (200,000 first grants) are still being flushed
# when wrk stops: wait until the fleet node has sent nothing for a second,
# so that its backlog (guardd's and redis-server's CPU) does not fall on
# the first measured round, which is the other node's.
last=; still=0
for _ in $(seq 600); do
  cur=$(fleet)
  if [ "$cur" = "$last" ]; then still=$((still + 1)); else still=0; fi
  [ $still -ge 5 ] && break
  last=$cur; sleep 0.2
done
echo "== fleet node settled: scripts, flushes, lease waits so far: $cur"
for r in $(seq "$rounds"); do
  for mode in off on; do
    port=19500; [ $mode = on ] && port=19502
    g=${pids[1]}; [ $mode = on ] && g=${pids[2]}
    read -r k0 f0 w0 <<<"$(fleet)"
    g0=$(cpu "$g"); r0=$(cpu "$rpid"); t0=$(date +%s.%N)
    res=$(wrk -t1 -c32 -d"$dur" --latency -s "$out/decide.lua" "http://127.0.0.1:$port/v1/decide")
    v=$(awk '/Requests\/sec/ {print $2}' <<<"$res")
    p99=$(awk '$1 == "99%" {print $2}' <<<"$res")
    rps[$mode]="${rps[$mode]:-} $v"
    g1=$(cpu "$g"); r1=$(cpu "$rpid"); t1=$(date +%s.%N)
    read -r k1 f1 w1 <<<"$(fleet)"
    n=$(awk '/requests in/ {print $1}' <<<"$res")
    all[$mode]=$(( ${all[$mode]:-0} + n ))
    gus=$(awk -v a="$g0" -v b="$g1" -v n="$n" -v h="$hz" 'BEGIN {printf "%.1f", 1e6 * (b - a) / h / n}')
    rus=$(awk -v a="$r0" -v b="$r1" -v n="$n" -v h="$hz" 'BEGIN {printf "%.1f", 1e6 * (b - a) / h / n}')
    cpus[$mode]="${cpus[$mode]:-} $gus"
    extra=""
    [ $mode = on ] && extra=$(awk -v k=$((k1 - k0)) -v f=$((f1 - f0)) -v w=$((w1 - w0)) -v n="$n" -v d="${dur%s}" 'BEGIN {printf "; %.3f scripts per request, %.0f flushes/s, %d lease waits", k / n, f / d, w}')
    echo "round $r fleet $mode: $v requests/s, p99 $p99; CPU per request: guardd $gus µs, redis-server $rus µs$extra"
    [ $mode = off ] && roundoff=$v
  done
  pairs="${pairs:-} $(awk -v a="$v" -v b="$roundoff" 'BEGIN {printf "%.4f", a / b}')"
done
med() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
off=$(med <<<"${rps[off]}"); on=$(med <<<"${rps[on]}")
echo "median: off $off requests/s, on $on requests/s: on/off $(awk -v a="$on" -v b="$off" 'BEGIN {printf "%.1f%%", 100 * a / b}')"
# Each round's on run follows its off run within seconds: the median of
# the rounds' own ratios is the figure least moved by the host's speed
# drifting between rounds (the medians above pair runs minutes apart).
echo "median of the rounds' on/off: $(med <<<"$pairs" | awk '{printf "%.1f%%", 100 * $1}') (rounds:$(tr ' ' '\n' <<<"$pairs" | grep . | awk '{printf " %.1f%%", 100 * $1}'))"
# Every client's gcra lease runs out in the same round (they were all
# granted in the warm-up, and each client's requests come at the same
# pace): that round pays a script per client, which the median may leave
# out. The requests of all rounds together count it.
echo "all rounds: off ${all[off]} requests, on ${all[on]} requests: on/off $(awk -v a="${all[on]}" -v b="${all[off]}" 'BEGIN {printf "%.1f%%", 100 * a / b}')"
goff=$(med <<<"${cpus[off]}"); gon=$(med <<<"${cpus[on]}")
echo "median guardd CPU per request: off $goff µs, on $gon µs: off/on $(awk -v a="$goff" -v b="$gon" 'BEGIN {printf "%.1f%%", 100 * a / b}') (the throughput ratio on an idle CPU-bound node)"
echo "fleet node's Redis counting:"
curl -s http://127.0.0.1:19503/metrics | grep -E '^guardd_counting_redis_(flushes_total|decisions_total|breaker_state|keys_flushed_total)'

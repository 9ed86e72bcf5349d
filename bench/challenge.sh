#!/usr/bin/env bash
# Benchmarks the decision API with challenge clearances: wrk against
# `guardd run`'s /v1/decide on loopback (built-in rules), every request from
# one of 1,000,000 distinct addresses of 10.0.0.0/8 presenting its own valid
# clearance cookie (generated with the key guardd reads). Three runs with
# the same wrk script, in one go: guardd without a challenge mitigation
# (the cookies are not checked), guardd with a manual challenge over
# 10.0.0.0/8 (every request's clearance checked, all allowed), and nginx
# `return 204`.
# Uses wrk when installed, else bench/cmd/decideload (LOAD=go forces it).
# Ports 19495-19497 on 127.0.0.1.
#
#   bench/challenge.sh [DURATION]    default 10s
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-10s}
out=$PWD/bench/out/challenge
rm -rf "$out"; mkdir -p "$out/state"; chmod 700 "$out/state"
[ -x /usr/sbin/nginx ] || { echo "nginx is not installed (Debian: nginx-light)" >&2; exit 1; }
go build -o "$out/guardd" ./cmd/guardd
go run ./bench/cmd/clearances -keys "$out/state/challenge.key" -n "${N:-1000000}" -ua "Mozilla/5.0" > "$out/clearances.txt"
: > "$out/access.log"
cat > "$out/guardd.yaml" <<YAML
sources: {nginx: {paths: ["$out/access.log"]}}
decision: {listen: 127.0.0.1:19495}
admin: {listen: 127.0.0.1:19496}
characteristics: {prefix_v4: 8}
mitigation: {state_dir: "$out/state"}
YAML
GOMAXPROCS=${GOMAXPROCS:-$(nproc)} "$out/guardd" run --config "$out/guardd.yaml" --log-level warn 2> "$out/guardd.log" &
gpid=$!
cat > "$out/nginx.conf" <<NGINX
daemon off; worker_processes 1; user root; pid $out/nginx.pid; error_log $out/nginx.err;
events { worker_connections 1024; }
http { access_log off; client_body_temp_path $out/b; proxy_temp_path $out/p; fastcgi_temp_path $out/f; uwsgi_temp_path $out/u; scgi_temp_path $out/s;
  keepalive_requests 1000000;
  server { listen 127.0.0.1:19497; location / { return 204; } } }
NGINX
/usr/sbin/nginx -p "$out" -c "$out/nginx.conf" &
npid=$!
cleanup() { kill "$gpid" "$npid" 2>/dev/null || true; wait "$gpid" "$npid" 2>/dev/null || true; }
trap cleanup EXIT
for _ in $(seq 100); do curl -sf http://127.0.0.1:19496/healthz >/dev/null && break; sleep 0.1; done

# Each request reads the next line of the clearances file (wrapping round):
# its address and its cookie.
cat > "$out/decide.lua" <<LUA
local f = io.open("$out/clearances.txt")
local n = 0
request = function()
  local line = f:read("*l")
  if not line then f:seek("set", 0); line = f:read("*l") end
  n = n + 1
  local ip, tok = line:match("^(%S+) (%S+)$")
  return wrk.format("GET", "/v1/decide", {["X-Real-IP"] = ip, ["X-Original-Method"] = "GET",
    ["X-Original-URI"] = "/product/" .. (n % 5000), ["User-Agent"] = "Mozilla/5.0", ["Accept"] = "text/html",
    ["Cookie"] = "session=s" .. n .. "; guardd_clearance=" .. tok})
end
LUA
# Without wrk (LOAD=go, or wrk absent), bench/cmd/decideload sends the same
# requests from Go.
if [ "${LOAD:-}" = go ] || ! command -v wrk >/dev/null; then
  go build -o "$out/decideload" ./bench/cmd/decideload
  run() { "$out/decideload" -addr "$1" -file "$out/clearances.txt" -c 32 -d "$dur" | tee "$out/last.txt" | sed 's|^|  |'; }
  requests() { sed -nE 's/.*\(([0-9]+) in .*/\1/p' "$out/last.txt"; }
  client="bench/cmd/decideload -c32 -d$dur"
else
  run() { wrk -t1 -c32 -d"$dur" --latency -s "$out/decide.lua" "http://$1/v1/decide" | tee "$out/last.txt" | grep -E "Requests/sec|Latency|  50%|  99%|Non-2xx"; }
  requests() { sed -nE 's/^ *([0-9]+) requests in .*/\1/p' "$out/last.txt"; }
  client="wrk -t1 -c32 -d$dur --latency"
fi
# guardd's own CPU (user+sys, from /proc) per request answered: on a
# shared machine a steadier figure than the throughput, which the load
# generator and nginx share the cores for.
ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14+$15}' "/proc/$gpid/stat"; }
guardd_run() {
  local c0 c1
  c0=$(cpu); run "$1"; c1=$(cpu)
  awk -v c="$((c1 - c0))" -v t="$ticks" -v n="$(requests)" 'BEGIN { printf "  guardd CPU: %.2f s, %.2f us per request\n", c / t, c / t / n * 1e6 }'
}
echo "machine: $(nproc) cores, $(date -u +'%F %H:%M'), load $(cut -d' ' -f1-3 /proc/loadavg), $client"
echo "== guardd /v1/decide, no challenge mitigation (cookies present, not checked)"
guardd_run 127.0.0.1:19495
"$out/guardd" decisions add --scope ip.src.prefix=10.0.0.0/8 --action challenge --duration 1h \
  --admin 127.0.0.1:19496 --token-file "$out/state/admin.token" > /dev/null
echo "== guardd /v1/decide, a challenge over 10.0.0.0/8: each of 1,000,000 clearances checked"
guardd_run 127.0.0.1:19495
echo "== nginx return 204, the same requests (wrk's Lua script)"
run 127.0.0.1:19497
curl -s http://127.0.0.1:19496/metrics | grep -E '^guardd_challenge_clearances_checked_total|^guardd_decision_requests_total|^process_resident_memory_bytes' | grep -v ' 0$'

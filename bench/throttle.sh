#!/usr/bin/env bash
# Benchmarks the decision API with throttle rules: wrk against `guardd run`'s
# /v1/decide on loopback, the built-in rules plus two throttle rules on
# ip.src (gcra 60/min burst 10, sliding window 600/10m), over 1,000,000
# distinct client addresses (a warm-up run puts them all in the counters),
# one request in ten from 100 hot addresses that get refused; beside nginx
# `return 204` with the same requests (the same wrk script) in the same run.
# Installs wrk and nginx when absent (as root, services kept from starting).
# Ports 19490-19492 on 127.0.0.1.
#
#   bench/throttle.sh [DURATION]    default 10s
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-10s}
out=$PWD/bench/out/throttle
rm -rf "$out"; mkdir -p "$out/rules"
export DEBIAN_FRONTEND=noninteractive
if [ "$(id -u)" = 0 ] && { ! command -v wrk >/dev/null || ! [ -x /usr/sbin/nginx ]; }; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  apt-get update -qq && apt-get install -y -qq wrk nginx-light >/dev/null
fi
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
: > "$out/access.log"
cat > "$out/guardd.yaml" <<YAML
sources: {nginx: {paths: ["$out/access.log"]}}
decision: {listen: 127.0.0.1:19490}
admin: {listen: 127.0.0.1:19491}
rules: {dirs: ["$out/rules"]}
counting: {max_keys: 1100000}
mitigation: {state_dir: "$out/state"}
YAML
GOMAXPROCS=${GOMAXPROCS:-$(nproc)} "$out/guardd" run --config "$out/guardd.yaml" --log-level warn 2> "$out/guardd.log" &
gpid=$!
cat > "$out/nginx.conf" <<NGINX
daemon off; worker_processes 1; user root; pid $out/nginx.pid; error_log $out/nginx.err;
events { worker_connections 1024; }
http { access_log off; client_body_temp_path $out/b; proxy_temp_path $out/p; fastcgi_temp_path $out/f; uwsgi_temp_path $out/u; scgi_temp_path $out/s;
  server { listen 127.0.0.1:19492; location / { return 204; } } }
NGINX
/usr/sbin/nginx -p "$out" -c "$out/nginx.conf" &
npid=$!
cleanup() { kill "$gpid" "$npid" 2>/dev/null || true; wait "$gpid" "$npid" 2>/dev/null || true; }
trap cleanup EXIT
for _ in $(seq 100); do curl -sf http://127.0.0.1:19491/healthz >/dev/null && break; sleep 0.1; done

# n walks 1,000,000 addresses (10.0.0.0 up); every tenth request is from one
# of 100 hot addresses. Each wrk thread starts at another offset.
cat > "$out/decide.lua" <<'LUA'
local n = 0
request = function()
  n = n + 1
  local ip
  if n % 10 == 0 then ip = string.format("172.16.0.%d", (n / 10) % 100)
  else local k = n % 1000000; ip = string.format("10.%d.%d.%d", k / 65536, (k / 256) % 256, k % 256) end
  local path = "/api/items/" .. (n % 5000)
  if n % 3 == 0 then path = "/product/" .. (n % 5000) end
  return wrk.format("GET", "/v1/decide", {["X-Real-IP"] = ip, ["X-Original-Method"] = "GET",
    ["X-Original-URI"] = path, ["User-Agent"] = "Mozilla/5.0", ["Cookie"] = "session=s" .. n})
end
LUA
echo "machine: $(nproc) cores, $(date -u +'%F %H:%M'), load $(cut -d' ' -f1-3 /proc/loadavg), wrk -t1 -c32 -d$dur --latency"
echo "== warm-up: 1,100,000 requests put every address in the counters"
wrk -t1 -c32 -d60s --latency -s "$out/decide.lua" http://127.0.0.1:19490/v1/decide >/dev/null &
wpid=$!
for _ in $(seq 600); do
  keys=$(curl -s http://127.0.0.1:19491/metrics | awk '/^guardd_throttle_requests_total/ {s += $2} END {print s+0}')
  [ "${keys%.*}" -ge 1800000 ] && break
  sleep 0.1
done
kill $wpid 2>/dev/null || true; wait $wpid 2>/dev/null || true
echo "throttle decisions so far: $keys"
echo "== guardd /v1/decide, throttle rules, 1,000,000 keys"
wrk -t1 -c32 -d"$dur" --latency -s "$out/decide.lua" http://127.0.0.1:19490/v1/decide | grep -E "Requests/sec|Latency|  50%|  99%|Non-2xx"
echo "== nginx return 204, the same requests (wrk's Lua script)"
wrk -t1 -c32 -d"$dur" --latency -s "$out/decide.lua" http://127.0.0.1:19492/v1/decide | grep -E "Requests/sec|Latency|  50%|  99%"
curl -s http://127.0.0.1:19491/metrics | grep -E '^guardd_throttle_requests_total|^guardd_decision_requests_total|^go_memstats_heap_inuse_bytes|^process_resident_memory_bytes'

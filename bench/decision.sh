#!/usr/bin/env bash
# Benchmarks the decision API: wrk against `guardd run`'s /v1/decide on
# loopback, with 100,000 active mitigations and the built-in rules, beside
# nginx answering a static 204 in the same run (the ceiling of an HTTP
# round trip on this machine). Installs wrk and nginx when absent (as root,
# services kept from starting). Ports 19480-19482 on 127.0.0.1.
#
#   bench/decision.sh [DURATION]    default 10s
#   COUNT=1 bench/decision.sh       with decision.count: every request carries
#                                   an X-Request-ID and is counted when asked
set -euo pipefail
cd "$(dirname "$0")/.."
dur=${1:-10s}
out=$PWD/bench/out/decision
rm -rf "$out"; mkdir -p "$out"
export DEBIAN_FRONTEND=noninteractive
if [ "$(id -u)" = 0 ] && { ! command -v wrk >/dev/null || ! [ -x /usr/sbin/nginx ]; }; then
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  apt-get update -qq && apt-get install -y -qq wrk nginx-light >/dev/null
fi
. bench/lib.sh
start_guardd "$out" 19480 19481
cat > "$out/nginx.conf" <<NGINX
daemon off; worker_processes 1; user root; pid $out/nginx.pid; error_log $out/nginx.err;
events { worker_connections 1024; }
http { access_log off; client_body_temp_path $out/b; proxy_temp_path $out/p; fastcgi_temp_path $out/f; uwsgi_temp_path $out/u; scgi_temp_path $out/s;
  server { listen 127.0.0.1:19482; location / { return 204; } } }
NGINX
/usr/sbin/nginx -p "$out" -c "$out/nginx.conf" &
npid=$!
cleanup() { kill "$gpid" "$npid" 2>/dev/null || true; wait "$gpid" "$npid" 2>/dev/null || true; }
trap cleanup EXIT
"$out/daemonbench" load -admin 127.0.0.1:19481 -token "$out/state/admin.token" -n 100000

# Clients: 1 in 10 from a banned address, the rest from 10,000 others.
cat > "$out/decide.lua" <<LUA
local count = ${COUNT:-0} == 1
LUA
cat >> "$out/decide.lua" <<'LUA'
local n = 0
request = function()
  n = n + 1
  local ip
  if n % 10 == 0 then ip = string.format("10.0.%d.%d", (n / 256) % 256, n % 256)
  else ip = string.format("172.16.%d.%d", (n / 256) % 40, n % 256) end
  local h = {["X-Real-IP"] = ip, ["X-Original-Method"] = "GET",
    ["X-Original-URI"] = "/product/" .. (n % 5000), ["User-Agent"] = "Mozilla/5.0", ["Cookie"] = "session=s" .. n}
  if count then h["X-Request-ID"] = string.format("%032x", n) end
  return wrk.format("GET", "/v1/decide", h)
end
LUA
echo "machine: $(nproc) cores, $(date -u +%F), wrk -t1 -c32 -d$dur --latency"
echo "== guardd /v1/decide (100,000 mitigations, built-in rules)"
wrk -t1 -c32 -d"$dur" --latency -s "$out/decide.lua" http://127.0.0.1:19480/v1/decide | grep -E "Requests/sec|Latency|  50%|  99%|Non-2xx"
echo "== nginx return 204 (ceiling)"
wrk -t1 -c32 -d"$dur" --latency http://127.0.0.1:19482/ | grep -E "Requests/sec|Latency|  50%|  99%"
# wrk's Lua request builder costs wrk more than a fixed request: the same
# requests against nginx are the ceiling of what this client can ask.
echo "== nginx return 204, the same requests (wrk's Lua script)"
wrk -t1 -c32 -d"$dur" --latency -s "$out/decide.lua" http://127.0.0.1:19482/v1/decide | grep -E "Requests/sec|Latency|  50%|  99%"

# The denied addresses (the even ones of 10.0.0.0/16 that the script asks
# about) also trip scanner_ua through the log, so their requests carry a
# rule's mitigation and the rules' mitigation expressions are evaluated for
# them (a request with no rule mitigation skips that).
before=$(curl -s -H "Authorization: Bearer $(cat "$out/state/admin.token")" http://127.0.0.1:19481/metrics |
  awk '/^guardd_mitigation_active/ {s += $2} END {print s}')
id=""; [ "${COUNT:-0}" = 1 ] && id=" -" # the $request_id COUNT=1's format ends with
awk -v ts="$(date '+%d/%b/%Y:%H:%M:%S %z')" -v id="$id" 'BEGIN {
  for (a = 0; a < 65536; a += 2) for (i = 0; i < 4; i++)
    printf "10.0.%d.%d - - [%s] \"GET /x HTTP/1.1\" 404 0 \"-\" \"sqlmap/1.7\"%s\n", a / 256, a % 256, ts, id
}' >> "$out/access.log"
for _ in $(seq 200); do
  now=$(curl -s -H "Authorization: Bearer $(cat "$out/state/admin.token")" http://127.0.0.1:19481/metrics |
    awk '/^guardd_mitigation_active/ {s += $2} END {print s}')
  [ "$now" -ge $((before + 32768)) ] && break
  sleep 0.1
done
echo "== guardd /v1/decide, denied addresses also under scanner_ua's mitigation ($now mitigations)"
wrk -t1 -c32 -d"$dur" --latency -s "$out/decide.lua" http://127.0.0.1:19480/v1/decide | grep -E "Requests/sec|Latency|  50%|  99%|Non-2xx"

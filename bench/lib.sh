# Sourced by the daemon benchmarks. start_guardd OUT DECISION_PORT ADMIN_PORT
# builds guardd and daemonbench into OUT, starts `guardd run` on loopback
# following OUT/access.log with the built-in rules and state in OUT/state,
# waits until its admin API answers, and sets gpid. GOMAXPROCS and GOGC pass
# through from the environment. COUNT=1 turns decision.count on, with
# $request_id at the end of the combined log format.
start_guardd() {
  local out=$1 decision=$2 admin=$3
  go build -o "$out/guardd" ./cmd/guardd
  go build -o "$out/daemonbench" ./bench/daemonbench
  : > "$out/access.log"
  local count=false format=combined
  if [ "${COUNT:-0}" = 1 ]; then
    count=true
    format='$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $request_id'
  fi
  cat > "$out/guardd.yaml" <<YAML
log: {format: '$format'}
sources: {nginx: {paths: ["$out/access.log"]}}
decision: {listen: 127.0.0.1:$decision, count: $count}
admin: {listen: 127.0.0.1:$admin}
mitigation: {state_dir: "$out/state"}
YAML
  GOMAXPROCS=${GOMAXPROCS:-$(nproc)} GOGC=${GOGC:-100} "$out/guardd" run --config "$out/guardd.yaml" --log-level warn 2> "$out/guardd.log" &
  gpid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$admin/healthz" >/dev/null && return 0; sleep 0.1; done
  echo "guardd did not start; see $out/guardd.log" >&2
  return 1
}

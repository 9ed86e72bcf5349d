#!/usr/bin/env bash
# Benchmarks `guardd replay` on a 1,000,000-line combined log with the built-in
# rules, beside peers measured on the same file in the same run:
#   - awk '{print $1}' | sort | uniq -c   the floor: read, split, count per IP
#   - goaccess 1.7 (Debian)               a log analyser: parses and aggregates,
#                                          no detection
#   - CrowdSec 1.4.6 (Debian), replay     nginx parsers + base-http-scenarios,
#     ("time machine") mode                set up offline by bench/crowdsec-setup.sh
# and prints wall time, lines/s, peak RSS and detections of each, then scores
# the detections of guardd and CrowdSec against the generator's labels.
#
#   bench/replay.sh            1,000,000 lines
#   bench/replay.sh --quick    100,000 lines, to try it out
#   bench/replay.sh LINES
#
# Environment:
#   RUNS=3              runs per tool except CrowdSec; the best wall time counts
#   CROWDSEC_TIMEOUT=900
#                       seconds CrowdSec may take to parse the file; when it
#                       runs out, lines/s is what it parsed so far over the time
#                       taken, and the row says "partial"
#   CROWDSEC=0          skip CrowdSec
#
# The log (and the labels of the attacks in it) is generated once with
# bench/cmd/loggen and cached under bench/out/, which git ignores; results go to
# bench/out/replay-LINES.txt. As root it installs goaccess and sets up CrowdSec
# when absent; it never starts CrowdSec's service, only its own crowdsec
# process, which it kills by PID.
#
# CrowdSec in replay mode never exits (its leaky buckets wait in real time), so
# it runs in the background while its Prometheus endpoint is polled every second
# until cs_parser_hits_ok_total + cs_parser_hits_ko_total reach the line count;
# the elapsed time includes its start-up, as the others' wall time does. Its
# peak RSS is VmHWM from /proc/PID/status (agent and local API are one process).
set -euo pipefail
cd "$(dirname "$0")/.."

lines=1000000
case "${1:-}" in
  --quick) lines=100000 ;;
  "") ;;
  *[!0-9]*) echo "usage: $0 [--quick | LINES]" >&2; exit 2 ;;
  *) lines=$1 ;;
esac
runs=${RUNS:-3}
cs_timeout=${CROWDSEC_TIMEOUT:-900}
out=bench/out
mkdir -p "$out"
results=$out/replay-$lines.txt
: > "$results"
# Outputs scored at the end: none may be left from an earlier run.
rm -f "$out"/guardd_replay*.out
say() { echo "$@" | tee -a "$results"; }

if [ "$(id -u)" = 0 ] && ! command -v goaccess >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq goaccess >/dev/null ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq goaccess >/dev/null; }
fi
use_crowdsec=false
if [ "${CROWDSEC:-1}" != 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    use_crowdsec=true
  else
    echo "crowdsec: needs root (bench/crowdsec-setup.sh); not measured" >&2
  fi
fi

have_guardd=true
if ! go build -o "$out/guardd" ./cmd/guardd; then
  echo "guardd does not build: measuring the peers only" >&2
  have_guardd=false
fi

log=$out/access-$lines.log
labels=$out/access-$lines.labels.json
mmdb=$out/access-$lines.mmdb
if [ ! -s "$log" ] || [ ! -s "$labels" ] || [ ! -s "$mmdb" ]; then
  # ~115 lines per benign client over 6 hours, plus the attack campaigns
  # (which all fall in its first 45 minutes), cut to exactly $lines lines.
  go run ./bench/cmd/loggen -benign $(( lines / 110 )) -duration 6h -format combined \
    -o "$log.tmp" -labels "$labels" -mmdb "$mmdb"
  head -n "$lines" "$log.tmp" > "$log" && rm -f "$log.tmp"
fi
n=$(wc -l < "$log")
cat "$log" > /dev/null # warm the page cache for everyone alike

say "machine: $(nproc) cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), $(free -g | awk '/^Mem:/ {print $2}') GiB RAM, Linux $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg)"
say "date: $(date -u '+%F %T UTC'); log: $log, $n lines, $(du -h "$log" | cut -f1)"
say "$(go version | cut -d' ' -f3-); guardd $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo '+dirty tree')"
say ""
header=$(printf '%-34s %4s %8s %10s %8s %11s %10s  %s' tool runs "wall s" "lines/s" "CPU s" "lines/CPU-s" "peak RSS" detections)
say "$header"
say "$(printf '%s' "$header" | tr -c '' '-')"

row() { # name, runs, wall secs, CPU secs, peak RSS KiB, detections[, lines processed (default: all)]
  awk -v name="$1" -v runs="$2" -v s="$3" -v cpu="$4" -v kb="$5" -v det="$6" -v n="${7:-$n}" \
    'BEGIN{printf "%-34s %4s %8.2f %10.0f %8.2f %11.0f %7.1f MB  %s\n", name, runs, s, n/s, cpu, n/cpu, kb/1024, det}' | tee -a "$results"
}

measure() { # name, detections-command, command... (best of $runs wall times)
  local name=$1 detect=$2; shift 2
  local best='' rss='' cpu='' secs kb user sys base
  base=$out/$(echo "$name" | tr -c 'a-zA-Z0-9\n' '_')
  for _ in $(seq "$runs"); do
    if ! /usr/bin/time -f '%e %M %U %S' -o "$base.time" "$@" > "$base.out" 2> "$base.err"; then
      echo "$name failed:" >&2; tail -5 "$base.err" >&2; return 0
    fi
    read -r secs kb user sys < "$base.time"
    if [ -z "$best" ] || awk "BEGIN{exit !($secs < $best)}"; then
      best=$secs rss=$kb cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN{print u+s}')
    fi
  done
  row "$name" "$runs" "$best" "$cpu" "$rss" "$($detect "$base")"
}

no_detect() { echo "-"; }
guardd_detect() { # mitigations per rule, from --json output
  echo "$(grep -c . "$1.out" || true) mitigations:" \
    "$(sed -n 's/^{"rule":"\([^"]*\)".*/\1/p' "$1.out" | sort | uniq -c | awk '{printf "%s%s %s", sep, $2, $1; sep=", "}')"
}

measure "awk|sort|uniq -c (floor)" no_detect bash -c "awk '{print \$1}' '$log' | sort | uniq -c > /dev/null"
if $have_guardd; then
  measure "guardd replay" guardd_detect "$out/guardd" replay --progress never --json "$log"
  measure "guardd replay --mmdb (ASN)" guardd_detect "$out/guardd" replay --progress never --json --mmdb "$mmdb" "$log"
fi
if command -v goaccess >/dev/null; then
  measure "goaccess $(goaccess -V | sed -n 's/^GoAccess - \([0-9.]*[0-9]\).*/\1/p')" no_detect \
    goaccess "$log" --log-format=COMBINED --no-global-config --no-progress -o "$out/goaccess.json"
fi

# --- CrowdSec -------------------------------------------------------------------
cs_pid=
cs_out=/nonexistent # scored only when CrowdSec ran in this run
cleanup() { if [ -n "$cs_pid" ]; then kill "$cs_pid" 2>/dev/null || true; fi; }
trap cleanup EXIT

metric() { # metric name, metrics text: sum of the samples of that name
  awk -v want="$1" '{ k = $1; sub(/\{.*/, "", k); if (k == want) s += $NF } END { printf "%d\n", s }' <<< "$2"
}

crowdsec_run() {
  local cfg=/etc/crowdsec/config.yaml
  bench/crowdsec-setup.sh --wipe-db >&2
  local addr port
  addr=$(awk '/^prometheus:/ {p=1; next} /^[a-z]/ {p=0} p && /listen_addr:/ {print $2}' "$cfg")
  port=$(awk '/^prometheus:/ {p=1; next} /^[a-z]/ {p=0} p && /listen_port:/ {print $2}' "$cfg")
  local url="http://$addr:$port/metrics" base=$out/crowdsec
  cs_out=$base.out
  local first_n=0 t0 now elapsed parsed=0 m='' status=complete first=''
  t0=$(date +%s.%N)
  crowdsec -c "$cfg" -dsn "file://$PWD/$log" -type nginx > "$base.out" 2>&1 &
  cs_pid=$!
  while :; do
    sleep 1
    now=$(date +%s.%N)
    elapsed=$(awk -v a="$t0" -v b="$now" 'BEGIN{printf "%.2f", b-a}')
    kill -0 "$cs_pid" 2>/dev/null || { echo "crowdsec exited early:" >&2; tail -5 "$base.out" >&2; cs_pid=; return 0; }
    m=$(curl -s -m 2 "$url" || true)
    [ -n "$m" ] || continue
    parsed=$(( $(metric cs_parser_hits_ok_total "$m") + $(metric cs_parser_hits_ko_total "$m") ))
    # start-up ends, give or take a poll, when the first lines are parsed
    if [ -z "$first" ] && [ "$parsed" -gt 0 ]; then first=$elapsed first_n=$parsed; fi
    [ "$parsed" -ge "$n" ] && break
    if awk -v e="$elapsed" -v t="$cs_timeout" 'BEGIN{exit !(e >= t)}'; then status=partial; break; fi
  done
  local kb cpu
  kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$cs_pid/status")
  cpu=$(awk -v tck="$(getconf CLK_TCK)" '{sub(/.*\) /, ""); print ($12 + $13) / tck}' "/proc/$cs_pid/stat")
  # Let the buckets fed by the last lines overflow and the alerts reach the log.
  local before=-1 after=0
  for _ in $(seq 30); do
    after=$(grep -c "performed '" "$base.out" || true)
    [ "$after" = "$before" ] && break
    before=$after
    sleep 1
  done
  echo "crowdsec: read $(metric cs_filesource_hits_total "$m"), parsed ok $(metric cs_parser_hits_ok_total "$m"), ko $(metric cs_parser_hits_ko_total "$m") of $n lines in $elapsed s ($status)" >&2
  kill "$cs_pid"
  wait "$cs_pid" 2>/dev/null || true
  cs_pid=
  local det name
  det="$(grep -o "Ip [^ ]* performed '[^']*'" "$base.out" | awk '{print $2}' | sort -u | wc -l) IPs banned, $(grep -c "performed '" "$base.out" || true) alerts:"
  det="$det $(grep -o "performed '[^']*'" "$base.out" | cut -d"'" -f2 | sed 's|.*/||' | sort | uniq -c | awk '{printf "%s%s %s", sep, $2, $1; sep=", "}')"
  name="crowdsec $(crowdsec -version 2>&1 | sed -n 's/.*version: v\{0,1\}\([0-9.]*\).*/\1/p') replay"
  if [ "$status" = partial ]; then
    name="$name (partial)"
    det="$det [parsed $parsed of $n lines in ${cs_timeout}s]"
  fi
  # lines/s is over the lines parsed, which is n unless partial.
  row "$name" 1 "$elapsed" "$cpu" "$kb" "$det" "$parsed"
  if [ -n "$first" ]; then
    say "$(awk -v f="$first" -v fn="$first_n" -v e="$elapsed" -v p="$parsed" \
      'BEGIN{printf "  (crowdsec start-up took about %.0f s; %.0f lines/s after it)", f, (e > f) ? (p-fn)/(e-f) : 0}')"
  fi
}
if $use_crowdsec && command -v crowdsec >/dev/null; then
  crowdsec_run
fi

# --- detections against the labels -----------------------------------------------
score() {
  python3 - "$labels" "$out/guardd_replay.out" "$out/guardd_replay___mmdb__ASN_.out" "$cs_out" <<'EOF'
import ipaddress, json, re, sys
labels = json.load(open(sys.argv[1]))
benign = set(labels["BenignIPs"])

def guardd(path):
    try:
        ms = [json.loads(l) for l in open(path) if l.strip()]
    except OSError:
        return None
    return ms

def crowdsec(path):
    try:
        text = open(path).read()
    except OSError:
        return None
    return set(re.findall(r"Ip (\S+) performed '", text))

runs = [("guardd", guardd(sys.argv[2])), ("guardd --mmdb", guardd(sys.argv[3])), ("crowdsec", crowdsec(sys.argv[4]))]
runs = [(n, r) for n, r in runs if r is not None]
print("%-46s %-24s" % ("attack (labelled scope: values)", "") + "".join("%-16s" % n for n, _ in runs))
for a in labels["Attacks"]:
    cells = []
    for name, r in runs:
        if name.startswith("guardd"):
            # values of the labelled scope mitigated, and attack IPs blocked by ip.src
            vals = {m["scope"].get(a["Scope"]) for m in r}
            ips = {m["scope"].get("ip.src") for m in r}
            caught = len(set(a["Values"]) & vals)
            cells.append("%d/%d %s" % (caught, len(a["Values"]), "" if a["Scope"] == "ip.src" else "(%d/%d IPs)" % (len(set(a["IPs"]) & ips), len(a["IPs"]))))
        else:
            cells.append("%d/%d IPs" % (len(set(a["IPs"]) & r), len(a["IPs"])))
    print("%-46s %-24s" % (a["Name"][:46], a["Scope"][:24]) + "".join("%-16s" % c for c in cells))
attack_ips = {ip for a in labels["Attacks"] for ip in a["IPs"]}
def covers_attack_only(prefix):
    if prefix is None:
        return False
    net = ipaddress.ip_network(prefix, strict=False)
    inside = lambda ips: any(ipaddress.ip_address(ip) in net for ip in ips)
    return inside(attack_ips) and not inside(benign)
cells = []
for name, r in runs:
    if name.startswith("guardd"):
        ips = {m["scope"].get("ip.src") for m in r}
        # A mitigation keyed on a prefix that covers attack addresses only
        # (the per-ASN scrapers stopped by their /24, say) is a catch too.
        other = [m for m in r if not any(m["scope"].get(a["Scope"]) in a["Values"] for a in labels["Attacks"])
                 and m["scope"].get("ip.src") not in attack_ips
                 and not covers_attack_only(m["scope"].get("ip.src.prefix"))]
        cells.append("%d IPs, %d other" % (len(ips & benign), len(other)))
    else:
        cells.append("%d IPs" % len(r & benign))
print("%-46s %-24s" % ("benign clients mitigated (false positives)", "") + "".join("%-16s" % c for c in cells))
EOF
}
say ""
if command -v python3 >/dev/null; then
  score | tee -a "$results"
else
  say "(python3 absent: detections not scored against the labels)"
fi

g=$(grep '^guardd replay ' "$results" | head -1 || true)
say ""
[ -z "$g" ] || say "$(awk '{ for (i = 1; i <= NF; i++) if ($i == "MB") { rss = $(i-1); rate = $(i-4) } }
  END { printf "acceptance (>= 1,000,000 lines/s, < 200 MB): %s (%.0f lines/s, %.1f MB)", (rate >= 1000000 && rss < 200) ? "PASS" : "FAIL", rate, rss }' <<< "$g")"
say "results: $results"

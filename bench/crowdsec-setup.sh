#!/usr/bin/env bash
# Makes Debian 12's CrowdSec 1.4.6 usable offline as a benchmark peer of
# `guardd replay` (see bench/replay.sh), and does it idempotently: run it on a
# fresh machine or again on a configured one, the result is the same.
#
#   bench/crowdsec-setup.sh            install if absent, then configure
#   bench/crowdsec-setup.sh --wipe-db  also delete the sqlite DB (alerts,
#                                      decisions, machines, bouncers), then
#                                      register the local machine and any
#                                      packaged bouncer again
#
# What it does, and why:
#   - installs the `crowdsec` package with a policy-rc.d that exits 101, so no
#     service is started. The package's postinst fails offline at
#     `cscli capi register`; once the Central API is switched off below, the
#     postinst is rerun with `dpkg --configure crowdsec` and must succeed.
#   - copies the hub shipped in /usr/share/crowdsec/hub (with .index.json) to
#     /var/lib/crowdsec/hub and sets `cscli: hub_branch: master`, so cscli
#     recognises the items without downloading anything.
#   - enables the nginx collection by hand (cscli cannot download it): the
#     parsers s00-raw/syslog-logs, s01-parse/nginx-logs,
#     s02-enrich/{dateparse-enrich,http-logs} and the scenarios of
#     crowdsecurity/base-http-scenarios plus nginx-req-limit-exceeded, as
#     symlinks from /etc/crowdsec into the hub, the way cscli installs them.
#     The http-cve collection and the whitelists parser are left out: the
#     first matches nothing in a synthetic log, the second would drop private
#     addresses.
#   - copies the scenarios' data files to /var/lib/crowdsec/data (the hub
#     names path_traversal.txt http_path_traversal.txt).
#   - removes the online_client (CAPI) block, moves the local API to
#     127.0.0.1:38080 and Prometheus to 127.0.0.1:36060 (off the defaults 8080
#     and 6060, which other programs use), runs in the foreground
#     (daemonize: false) and logs to stdout.
#   - registers the local machine when the credentials do not match the DB.
#
# It never starts crowdsec nor its systemd unit (it disables the unit).
# Needs root; apt-get must reach a Debian mirror only when crowdsec is absent.
set -euo pipefail

wipe=false
case "${1:-}" in
  --wipe-db) wipe=true ;;
  "") ;;
  *) echo "usage: $0 [--wipe-db]" >&2; exit 2 ;;
esac
[ "$(id -u)" = 0 ] || { echo "crowdsec-setup: must run as root" >&2; exit 1; }

etc=/etc/crowdsec
cfg=$etc/config.yaml
hub=/var/lib/crowdsec/hub
shipped=/usr/share/crowdsec/hub
data=/var/lib/crowdsec/data
lapi=127.0.0.1:38080
prom_port=36060

# --- install -----------------------------------------------------------------
status() { dpkg-query -W -f='${Status}' crowdsec 2>/dev/null || true; }

with_policy_rc() { # runs "$@" with a policy-rc.d forbidding service starts
  local p=/usr/sbin/policy-rc.d saved=
  if [ -e "$p" ]; then saved=$(mktemp) && cp -p "$p" "$saved"; fi
  printf '#!/bin/sh\nexit 101\n' > "$p" && chmod 755 "$p"
  local rc=0
  "$@" || rc=$?
  if [ -n "$saved" ]; then mv "$saved" "$p"; else rm -f "$p"; fi
  return $rc
}

if [ "$(status)" != "install ok installed" ] && ! command -v crowdsec >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  with_policy_rc apt-get update -qq
  # The postinst is expected to fail at CAPI registration; configured below.
  with_policy_rc apt-get install -y -qq -o Dpkg::Options::=--force-confold crowdsec >/dev/null ||
    echo "crowdsec-setup: postinst failed as expected offline; configuring by hand" >&2
fi
if ! command -v crowdsec >/dev/null || ! command -v cscli >/dev/null; then
  echo "crowdsec-setup: crowdsec is not installed" >&2; exit 1
fi
[ -f "$cfg" ] || { echo "crowdsec-setup: $cfg missing" >&2; exit 1; }

# --- config.yaml ---------------------------------------------------------------
# Line edits keep the file's layout and comments; each is a no-op when done.
tmp=$(mktemp)
awk -v lapi="$lapi" -v port="$prom_port" '
  # drop the online_client block (the key and its more indented lines)
  skip && match($0, /^ */) && RLENGTH > skip_indent && $0 !~ /^ *$/ { next }
  { skip = 0 }
  /^ *online_client:/ { match($0, /^ */); skip = 1; skip_indent = RLENGTH; next }
  /^ *daemonize:/  { sub(/:.*/, ": false") }
  /^ *log_media:/  { sub(/:.*/, ": stdout") }
  /^ *listen_uri:/ { sub(/:.*/, ": " lapi) }
  /^prometheus:/   { section = "prometheus" }
  /^[a-z_]+:/ && !/^prometheus:/ { section = "" }
  section == "prometheus" && /^ *listen_addr:/ { sub(/:.*/, ": 127.0.0.1") }
  section == "prometheus" && /^ *listen_port:/ { sub(/:.*/, ": " port) }
  /^ *hub_branch:/ { next }
  { print }
  /^cscli:/ { print "  hub_branch: master" }
' "$cfg" > "$tmp"
if ! cmp -s "$tmp" "$cfg"; then cat "$tmp" > "$cfg"; fi
rm -f "$tmp"

# --- hub -----------------------------------------------------------------------
# A real copy, as Debian's enable_online_hub does: cscli resolves the symlinks
# from /etc/crowdsec through .index.json, and the postinst leaves a hub with a
# real .index.json alone.
mkdir -p "$hub" "$data"
for item in blockers collections parsers postoverflows scenarios .index.json; do
  if [ -L "$hub/$item" ] || [ ! -e "$hub/$item" ]; then
    rm -f "$hub/$item"
    cp -r "$shipped/$item" "$hub/"
  fi
done

link() { # hub path relative to $hub, e.g. parsers/s01-parse/crowdsecurity/nginx-logs.yaml
  local target=$hub/$1
  [ -f "$target" ] || { echo "crowdsec-setup: $target missing from the shipped hub" >&2; exit 1; }
  # /etc/crowdsec drops the vendor directory (parsers/s01-parse/nginx-logs.yaml).
  local dest
  dest=$etc/$(dirname "$(dirname "$1")")/$(basename "$1")
  mkdir -p "$(dirname "$dest")"
  [ "$(readlink "$dest" 2>/dev/null)" = "$target" ] || ln -sfn "$target" "$dest"
}
link parsers/s00-raw/crowdsecurity/syslog-logs.yaml
link parsers/s01-parse/crowdsecurity/nginx-logs.yaml
link parsers/s02-enrich/crowdsecurity/dateparse-enrich.yaml
link parsers/s02-enrich/crowdsecurity/http-logs.yaml
for s in http-crawl-non_statics http-probing http-bad-user-agent http-path-traversal-probing \
  http-sensitive-files http-sqli-probing http-xss-probing http-backdoors-attempts \
  http-generic-bf http-open-proxy nginx-req-limit-exceeded; do
  link "scenarios/crowdsecurity/$s.yaml"
done
link scenarios/ltsich/http-w00tw00t.yaml

cp /usr/share/crowdsec/data/* "$data/"
cp "$data/path_traversal.txt" "$data/http_path_traversal.txt"

# --- local API machine -----------------------------------------------------------
creds=$etc/local_api_credentials.yaml
if $wipe; then
  db=$(awk '/^ *db_path:/ {print $2}' "$cfg")
  rm -f "${db:?}" "$db-wal" "$db-shm" "$db-journal"
fi
login=$(awk '/^login:/ {print $2}' "$creds" 2>/dev/null || true)
if [ -z "$login" ] || ! cscli machines list -o raw 2>/dev/null | cut -d, -f1 | grep -qxF "$login"; then
  cscli --error machines add --auto --force -f "$creds" --url "http://$lapi" >/dev/null
fi
sed -i "s|^url:.*|url: http://$lapi|" "$creds"
if $wipe; then
  # Bouncers installed from Debian packages (crowdsec-firewall-bouncer) keep
  # their name in NAME.yaml.id and their key in NAME.yaml.local: register
  # them again with the same key, so a wipe does not cut them off.
  for id in "$etc"/bouncers/*.yaml.id; do
    [ -f "$id" ] || continue
    key=$(awk '/^api_key:/ {print $2}' "${id%.id}.local" 2>/dev/null || true)
    [ -z "$key" ] || cscli --error bouncers add "$(cat "$id")" -k "$key" >/dev/null
  done
fi

# --- finish the package's configuration ------------------------------------------
# The postinst registers to CAPI when online_api_credentials.yaml is empty; a
# non-empty file is its documented way to skip that (CAPI is off in config.yaml).
capi=$etc/online_api_credentials.yaml
[ -s "$capi" ] || echo "# CAPI disabled: offline benchmark machine (bench/crowdsec-setup.sh)" > "$capi"
if [ "$(status)" != "install ok installed" ]; then
  with_policy_rc dpkg --configure crowdsec
fi
# Keep the unit from starting at boot: replay runs start crowdsec by hand.
if command -v deb-systemd-helper >/dev/null; then
  DPKG_MAINTSCRIPT_PACKAGE=crowdsec deb-systemd-helper disable crowdsec.service >/dev/null 2>&1 || true
fi

# --- check -----------------------------------------------------------------------
[ "$(status)" = "install ok installed" ] ||
  { echo "crowdsec-setup: package state is '$(status)'" >&2; exit 1; }
crowdsec -c "$cfg" -t >/dev/null 2>&1 || { crowdsec -c "$cfg" -t; exit 1; }
for p in nginx-logs http-logs dateparse-enrich; do
  cscli parsers list -o raw 2>/dev/null | grep -q "crowdsecurity/$p,enabled" ||
    { echo "crowdsec-setup: parser $p not enabled" >&2; exit 1; }
done
n=$(cscli scenarios list -o raw 2>/dev/null | grep -c ',enabled' || true)
echo "crowdsec-setup: ok ($(crowdsec -version 2>&1 | sed -n 's/.*version: //p'), $n scenarios, LAPI $lapi, metrics 127.0.0.1:$prom_port)"

#!/usr/bin/env bash
# Runs every guardd test: vet, gofmt, unit tests with -race, the integration
# tests (real tools on loopback and in network namespaces), and a short run of
# every fuzz target. Installs the Debian packages the tests need when absent,
# without letting their services start. Works on a fresh Debian 12 with Go.
#
#   FUZZTIME=10s   time per fuzz target (0 skips fuzzing)
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-10s}
export DEBIAN_FRONTEND=noninteractive

need=()
for pair in tshark:tshark tcpdump:tcpdump openssl:openssl ip:iproute2 nft:nftables nginx:nginx-light \
    redis-server:redis-server redis-sentinel:redis-sentinel redis-cli:redis-tools \
    curl:curl chromium:chromium systemd-analyze:systemd adduser:adduser runuser:util-linux dpkg-deb:dpkg \
    crowdsec-firewall-bouncer:crowdsec-firewall-bouncer; do
  cmd=${pair%%:*} pkg=${pair#*:}
  command -v "$cmd" >/dev/null 2>&1 || [ -x "/usr/sbin/$cmd" ] || need+=("$pkg")
done
# characteristics/bots' capture test drives Python's requests too.
python3 -c 'import requests' 2>/dev/null || need+=(python3-requests)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "== installing ${need[*]}"
    # Keep packages from starting their own services: tests start their own
    # instances on loopback.
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
    apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  else
    echo "== not root: tests that need ${need[*]} will skip"
  fi
fi

echo "== gofmt"
bad=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$bad" ]; then echo "not gofmt'd:"; echo "$bad"; exit 1; fi
echo "== go vet"
go vet ./...
# Two passes: every package under the race detector (short mode skips the
# multi-million-key floods and process-killing tests, which take minutes
# under -race), then everything, integration tests included, without it.
echo "== go test -race -short"
go test -race -short -count=1 -tags integration ./...
echo "== go test (all, with integration tests)"
go test -count=1 -tags integration ./...

if [ "$FUZZTIME" != 0 ]; then
  echo "== fuzz ($FUZZTIME each)"
  for pkg in $(go list ./...); do
    dir=$(go list -f '{{.Dir}}' "$pkg")
    for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/func //' | sort -u); do
      echo "-- $pkg $f"
      # A real finding writes its input under testdata/fuzz and fails. The
      # fuzzing engine can also stop with "context deadline exceeded" when
      # its time runs out mid-minimisation, with nothing found: retry that,
      # up to twice, rather than fail the run on the engine's timing.
      for try in 1 2 3; do
        if go test -run '^$' -fuzz "^$f\$" -fuzztime "$FUZZTIME" "$pkg" >/tmp/guardd-fuzz.log 2>&1; then
          break
        fi
        if grep -q "Failing input written" /tmp/guardd-fuzz.log || ! grep -q "context deadline exceeded" /tmp/guardd-fuzz.log || [ $try = 3 ]; then
          cat /tmp/guardd-fuzz.log; exit 1
        fi
        echo "   (fuzzing engine timed out without a finding; once more)"
      done
    done
  done
fi
echo "== all tests passed"

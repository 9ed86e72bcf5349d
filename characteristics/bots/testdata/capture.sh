#!/bin/sh
# capture.sh OUT.pcap — records the TLS ClientHellos of the clients whose
# stacks tls_clients.txt names, each from its own loopback address, talking
# to a local openssl s_server on a non-default port:
#
#   127.0.0.1  Chromium headless (Debian chromium)
#   127.0.0.2  curl
#   127.0.0.3  python3 urllib
#   127.0.0.4  python3 requests
#   127.0.0.5  Go net/http (testdata/goclient)
#
# Every client sends a Chrome user agent, as a bot pretending to be a
# browser would. Needs root (tcpdump), openssl, curl, python3 with requests,
# chromium and go. Nothing leaves 127.0.0.0/8.
set -eu
out=${1:?usage: capture.sh OUT.pcap}
here=$(cd "$(dirname "$0")" && pwd)
port=${PORT:-18443}
ua='Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'
host=guardd.test # sent as SNI; every client is pointed at 127.0.0.1 without DNS
url="https://$host:$port/"
tmp=$(mktemp -d)
pids=""
cleanup() { for p in $pids; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM

openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 1 \
	-keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2>/dev/null
openssl s_server -quiet -www -accept "127.0.0.1:$port" -cert "$tmp/cert.pem" -key "$tmp/key.pem" >/dev/null 2>&1 &
pids="$pids $!"
# wait for the server: a TCP connect succeeds
i=0; until python3 -c "import socket; socket.create_connection(('127.0.0.1',$port),1)" 2>/dev/null; do
	i=$((i+1)); [ $i -lt 100 ] || { echo "s_server did not start" >&2; exit 1; }; sleep 0.05; done

tcpdump -i lo -U --immediate-mode -w "$out" "tcp port $port" 2>"$tmp/tcpdump.err" &
tpid=$!
pids="$pids $tpid"
i=0; until grep -qs "listening on" "$tmp/tcpdump.err"; do
	i=$((i+1)); [ $i -lt 100 ] || { cat "$tmp/tcpdump.err" >&2; exit 1; }; sleep 0.05; done

(cd "$here/../../.." && go build -o "$tmp/goclient" ./characteristics/bots/testdata/goclient)
chromium --headless=new --no-sandbox --disable-gpu --ignore-certificate-errors --user-data-dir="$tmp/chromium" \
	--host-resolver-rules="MAP $host 127.0.0.1" --user-agent="$ua" --dump-dom "$url" >/dev/null 2>&1 || true
curl -sk --interface 127.0.0.2 --resolve "$host:$port:127.0.0.1" -A "$ua" -o /dev/null "$url"
python3 - "$ua" "$host" "$port" <<'PY'
import http.client, socket, ssl, sys
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
class Conn(http.client.HTTPSConnection):  # urllib's connection, pointed at 127.0.0.1
    def connect(self):
        s = socket.create_connection(("127.0.0.1", self.port), source_address=("127.0.0.3", 0))
        self.sock = ctx.wrap_socket(s, server_hostname=self.host)
c = Conn(sys.argv[2], int(sys.argv[3]), context=ctx)
c.request("GET", "/", headers={"User-Agent": sys.argv[1]}); c.getresponse().read()
PY
python3 - "$ua" "$host" "$port" <<'PY'
import sys, requests, urllib3
from requests.adapters import HTTPAdapter
urllib3.disable_warnings()
class Src(HTTPAdapter):
    def init_poolmanager(self, *a, **kw):
        kw["source_address"] = ("127.0.0.4", 0)
        kw["server_hostname"] = sys.argv[2]
        super().init_poolmanager(*a, **kw)
s = requests.Session(); s.mount("https://", Src())
s.get("https://127.0.0.1:" + sys.argv[3] + "/", headers={"User-Agent": sys.argv[1]}, verify=False)
PY
"$tmp/goclient" 127.0.0.5 "$ua" "$host" "https://127.0.0.1:$port/"
# let tcpdump write the last packets: wait until the file stops growing
last=-1; while :; do n=$(stat -c %s "$out"); [ "$n" = "$last" ] && break; last=$n; sleep 0.2; done
kill "$tpid"; wait "$tpid" 2>/dev/null || true

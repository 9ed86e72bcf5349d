#!/usr/bin/env bash
# Regenerates the ground-truth captures of this directory on 127.0.0.1 (root,
# tcpdump, openssl, curl, python3, Go). Every server is started here and
# stopped by its PID. Chromium captures are made when chromium is installed.
# Every run makes new handshakes (new keys, ports, times), so afterwards:
#   go test ./ingest/sniff -run Golden -update
#   go test -tags integration ./ingest/sniff -run Tshark   # JA3 against tshark
# The captures are ours, made here; never add third-party captures.
set -euo pipefail
cd "$(dirname "$0")"
out=$PWD
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

for t in tcpdump openssl curl python3 go; do
	command -v $t >/dev/null || { echo "make-captures: $t missing" >&2; exit 1; }
done

go build -o "$tmp/gen" gen.go
gen=$tmp/gen
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$tmp/k.pem" -out "$tmp/c.pem" \
	-subj /CN=example.test -addext subjectAltName=DNS:example.test -days 30 2>/dev/null

start() { # start PORT CMD...: run a server in the background, remember its PID, wait for PORT
	local port=$1
	shift
	"$@" >/dev/null 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do
		ss -Hltun "sport = :$port" | grep -q . && return
		sleep 0.1
	done
	echo "make-captures: $1 did not listen on $port" >&2
	exit 1
}
stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

# capture NAME FILTER CMD...: record lo while CMD runs.
capture() {
	local name=$1 filter=$2
	shift 2
	tcpdump -Z root -i lo --immediate-mode -U -s 0 -w "$out/$name" "$filter" >/dev/null 2>"$tmp/tcpdump.log" &
	local tp=$!
	for _ in $(seq 100); do grep -q listening "$tmp/tcpdump.log" && break; sleep 0.1; done
	sleep 0.5
	"$@" || echo "make-captures: $name: client failed" >&2
	sleep 0.5
	stop $tp
	echo "$name: $(stat -c %s "$out/$name") bytes"
}

start 14433 openssl s_server -accept 127.0.0.1:14433 -cert "$tmp/c.pem" -key "$tmp/k.pem" -www -alpn h2,http/1.1
start 14434 openssl s_server -accept 127.0.0.1:14434 -cert "$tmp/c.pem" -key "$tmp/k.pem" -www -groups secp384r1
sc() { openssl s_client "$@" </dev/null >/dev/null 2>&1; }

capture tls13.pcap 'tcp port 14433' sc -connect 127.0.0.1:14433 -servername example.test -alpn h2,http/1.1
capture tls12.pcap 'tcp port 14433' sc -connect 127.0.0.1:14433 -servername example.test -tls1_2
capture tls13-nosni.pcap 'tcp port 14433' sc -connect 127.0.0.1:14433 -noservername -alpn http/1.1
capture hrr.pcap 'tcp port 14434' sc -connect 127.0.0.1:14434 -servername example.test -groups x25519:secp384r1
start 14435 openssl s_server -accept '[::1]:14435' -cert "$tmp/c.pem" -key "$tmp/k.pem" -www
capture tls13-ipv6.pcap 'tcp port 14435' sc -connect '[::1]:14435' -servername v6.example.test
capture go-tls.pcap 'tcp port 14433' bash -c "$gen tlsclient 127.0.0.1:14433 example.test h2,http/1.1 && $gen tlsclient 127.0.0.1:14433 go.example.test http/1.1 tls12"

start 18080 python3 -m http.server --protocol HTTP/1.1 --bind 127.0.0.1 18080 --directory "$tmp"
capture http.pcap 'tcp port 18080' bash -c "curl -s --max-time 5 -o /dev/null -o /dev/null -H 'Cookie: sid=abc; lang=fr' -e http://example.test/ -H 'Accept-Language: fr-FR,fr;q=0.9' http://127.0.0.1:18080/ http://127.0.0.1:18080/c.pem?x=1; $gen pipeline 127.0.0.1:18080"

start 18888 "$gen" proxy 127.0.0.1:18888
capture connect.pcap 'tcp port 18888 or tcp port 14433' curl -sk --max-time 3 -o /dev/null -x http://127.0.0.1:18888 https://example.test:14433/
start 11080 "$gen" socks5 127.0.0.1:11080
capture socks5.pcap 'tcp port 11080 or tcp port 14433' curl -sk --max-time 3 -o /dev/null --socks5-hostname 127.0.0.1:11080 https://example.test:14433/

start 14443 "$gen" quicserver 127.0.0.1:14443 "$tmp/c.pem" "$tmp/k.pem" v1
capture quic-v1.pcap 'udp port 14443' "$gen" quicclient 127.0.0.1:14443 example.test v1
start 14444 "$gen" quicserver 127.0.0.1:14444 "$tmp/c.pem" "$tmp/k.pem" v2
capture quic-v2.pcap 'udp port 14444' "$gen" quicclient 127.0.0.1:14444 quic.example.test v2

capture ssdp.pcap 'udp port 1900' python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(b"M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nMAN: \"ssdp:discover\"\r\nMX: 1\r\nST: ssdp:all\r\n\r\n", ("127.0.0.1", 1900))'

# Chromium, when installed (apt-get install chromium): GREASE, extension
# shuffling, ALPS, ECH GREASE, ML-KEM key shares, an HRR, and QUIC.
if command -v chromium >/dev/null; then
	chrome() {
		timeout 30 chromium --headless=new --no-sandbox --disable-gpu --user-data-dir="$tmp/chrome" --no-first-run \
			--disable-background-networking --disable-component-update --ignore-certificate-errors \
			--host-resolver-rules="MAP example.test 127.0.0.1" "$@" >/dev/null 2>&1 || true
	}
	capture chromium.pcap 'tcp port 14433' chrome --dump-dom https://example.test:14433/
	capture chromium-hrr.pcap 'tcp port 14434' chrome --dump-dom https://example.test:14434/
	start 443 "$gen" quicserver 127.0.0.1:443 "$tmp/c.pem" "$tmp/k.pem" v1
	capture chromium-quic.pcap 'udp port 443' chrome --enable-quic --origin-to-force-quic-on=example.test:443 --dump-dom https://example.test/
fi

for m in split3rev nosyn3rev retrans vlan qinq gre erspan2 vxlan sll sll2 null; do
	"$gen" rewrite $m "$out/tls13.pcap" "$out/tls13-$m.pcap"
done
ls -l "$out"/*.pcap

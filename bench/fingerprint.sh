#!/usr/bin/env bash
# Benchmarks `guardd fingerprint --json` against tshark's JA3 on the same large
# capture, in the same run, and checks they found the same handshakes.
#
#   bench/fingerprint.sh [COPIES]   (default 70000 copies ≈ 105k handshakes)
#
# The capture replicates the ground-truth captures of ingest/sniff/testdata
# (openssl TLS 1.3 and 1.2, Go TLS 1.3 + 1.2, an HRR), each copy from its
# own client address and port. QUIC is left out: copies share connection IDs,
# which tshark merges into one connection. Needs tshark (apt-get install tshark).
set -euo pipefail
cd "$(dirname "$0")/.."
copies=${1:-70000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
td=ingest/sniff/testdata

go build -o "$tmp/guardd" ./cmd/guardd
go build -o "$tmp/gen" $td/gen.go
"$tmp/gen" replicate "$copies" "$tmp/big.pcap" $td/tls13.pcap $td/go-tls.pcap $td/hrr.pcap $td/tls12.pcap
echo "capture: $(stat -c %s "$tmp/big.pcap") bytes, $copies copies"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

t() { # t NAME CMD...: run CMD, print wall and CPU seconds
	local name=$1
	shift
	/usr/bin/time -f "$name: %e s wall, %U s user, %S s sys, %M KB max RSS" "$@"
}

t guardd "$tmp/guardd" fingerprint --json "$tmp/big.pcap" >"$tmp/guardd.json" 2>"$tmp/guardd.err" || true
cat "$tmp/guardd.err" | tail -1
ours=$(grep -c -E '"proto":"(tls|quic)"' "$tmp/guardd.json" || true)

if command -v tshark >/dev/null; then
	t tshark tshark -o tcp.reassemble_out_of_order:TRUE -d tcp.port==14433,tls -d tcp.port==14434,tls -r "$tmp/big.pcap" -Y 'tls.handshake.type==1' \
		-T fields -e frame.number -e tls.handshake.ja3 >"$tmp/tshark.txt" 2>"$tmp/tshark.err" || true
	grep -v '^Running as' "$tmp/tshark.err" | tail -1
	theirs=$(grep -c . "$tmp/tshark.txt" || true)
	# Same frames and JA3 hashes?
	grep -E '"proto":"(tls|quic)"' "$tmp/guardd.json" |
		sed -E 's/.*"frame":([0-9]+).*"ja3_hash":"([0-9a-f]*)".*/\1\t\2/' | sort >"$tmp/ours.txt"
	sort "$tmp/tshark.txt" >"$tmp/theirs.txt"
	if cmp -s "$tmp/ours.txt" "$tmp/theirs.txt"; then same=yes; else same=NO; fi
	echo "handshakes: guardd $ours, tshark $theirs, same frames and JA3: $same"
	diff "$tmp/theirs.txt" "$tmp/ours.txt" | head -5 || true
else
	echo "handshakes: guardd $ours (tshark not installed)"
fi

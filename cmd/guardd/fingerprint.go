package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"strconv"

	"github.com/guardd/guardd/ingest/sniff"
)

func init() {
	register("fingerprint", "print TLS/QUIC/HTTP fingerprints from pcap or pcapng files", runFingerprint)
}

// runFingerprint implements `guardd fingerprint [--json] [--ja4-alpn=legacy]
// [--no-ja4h] FILE...`. It exits 0 when every file was read (malformed packets
// are skipped and counted), 1 when a file could not be read, 2 on bad usage.
func runFingerprint(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fingerprint", flag.ContinueOnError)
	jsonOut := fs.Bool("json", false, "print one JSON object per line (the output contract)")
	alpn := fs.String("ja4-alpn", "spec", "JA4 ALPN rule: spec (JA4.md as published) or legacy (FoxIO's Rust tool before August 2024)")
	noJA4H := fs.Bool("no-ja4h", false, "leave ja4h empty (JA4H is under the FoxIO License 1.1, non-commercial)")
	stats := fs.Bool("stats", false, "print per-file counters to stderr")
	const synopsis = `usage: guardd fingerprint [--json] [--ja4-alpn=spec|legacy] [--no-ja4h] [--stats] FILE...

Prints a record for every TLS ClientHello (over TCP or in QUIC Initials) and
every HTTP/1.x request in pcap or pcapng files, in capture order.`
	files, code, done := parseFlags(fs, synopsis, args, stdout, stderr)
	if done {
		return code
	}
	cfg := sniff.Config{DisableJA4H: *noJA4H}
	switch *alpn {
	case "spec", "":
	case "legacy":
		cfg.LegacyALPN = true
	default:
		fmt.Fprintf(stderr, "guardd fingerprint: --ja4-alpn %q: want spec or legacy\n", *alpn)
		return 2
	}
	if len(files) == 0 {
		printUsage(fs, synopsis, stderr)
		return 2
	}

	w := bufio.NewWriterSize(stdout, 256<<10)
	if !*jsonOut {
		w.WriteString(tableHeader)
	}
	// FormatFile formats records on its fingerprinting workers, concurrently,
	// and writes them to w in capture order.
	format := func(dst []byte, r *sniff.Record) []byte {
		if *jsonOut {
			dst = r.AppendJSON(dst)
		} else {
			dst = appendRow(dst, r)
		}
		return append(dst, '\n')
	}
	status := 0
	for _, path := range files {
		st, err := sniff.FormatFile(path, cfg, w, format)
		// The file's lines are out before its messages on stderr.
		if werr := w.Flush(); werr != nil {
			fmt.Fprintf(stderr, "guardd fingerprint: write: %v\n", werr)
			return 1
		}
		if err != nil {
			fmt.Fprintf(stderr, "guardd fingerprint: %v\n", err)
			status = 1
			continue
		}
		if st.Truncated {
			fmt.Fprintf(stderr, "guardd fingerprint: %s: file ends inside a packet\n", path)
		}
		if *stats {
			fmt.Fprintf(stderr, "%s: packets %d, not tcp/udp %d, malformed %d, flows %d (evicted %d), records tls %d quic %d http %d\n",
				path, st.Packets, st.NotTransport, st.Malformed, st.FlowsCreated, st.FlowsEvicted, st.TLS, st.QUIC, st.HTTP)
		}
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintf(stderr, "guardd fingerprint: write: %v\n", err)
		return 1
	}
	return status
}

// Column widths of the human table.
const (
	colProto  = 6
	colFrame  = 8
	colAddr   = 24
	colDetail = 28
	colFP     = 52
)

var tableHeader = string(appendCols(nil, []string{"PROTO", "FRAME", "CLIENT", "SERVER", "SNI/PATH", "JA4/JA4H", "JA3_HASH"})) + "\n"

func appendCols(dst []byte, cols []string) []byte {
	widths := [...]int{colProto, colFrame, colAddr, colAddr, colDetail, colFP, 0}
	for i, c := range cols {
		dst = append(dst, c...)
		if i < len(cols)-1 {
			dst = append(dst, ' ')
			for n := len(c) + 1; n < widths[i]+1; n++ {
				dst = append(dst, ' ')
			}
		}
	}
	return dst
}

// appendRow appends r as one row of the human table; control bytes in the
// SNI or path are escaped so a hostile capture cannot drive the terminal.
func appendRow(dst []byte, r *sniff.Record) []byte {
	client := netip.AddrPortFrom(r.Src, r.SrcPort).String()
	server := netip.AddrPortFrom(r.Dst, r.DstPort).String()
	detail, fp, ja3 := r.SNI, r.JA4, r.JA3Hash
	if r.Proto == sniff.ProtoHTTP {
		detail, fp, ja3 = r.Method+" "+r.Path, r.JA4H, "-"
	}
	if detail == "" {
		detail = "-"
	}
	if fp == "" {
		fp = "-"
	}
	if ja3 == "" {
		ja3 = "-"
	}
	detail = strconv.QuoteToASCII(detail)
	detail = detail[1 : len(detail)-1]
	return appendCols(dst, []string{r.Proto, strconv.Itoa(r.Frame), client, server, detail, fp, ja3})
}

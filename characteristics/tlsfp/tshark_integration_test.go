//go:build integration

package tlsfp

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestJA3AgainstTshark sends every hand-built hello as one TCP segment of a
// single stream (text2pcap) and compares our JA3 string and hash with
// tshark's tls.handshake.ja3_full / ja3, frame by frame. Needs tshark and
// text2pcap (apt-get install tshark); skipped without them.
func TestJA3AgainstTshark(t *testing.T) {
	for _, tool := range []string{"tshark", "text2pcap"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	var cases []helloCase
	var fps []Fingerprint
	var dump strings.Builder
	for _, tc := range helloCases() {
		if tc.transport != 't' || tc.name == "sslv2_compatible" {
			continue
		}
		msg := tc.hello(t)
		var ch ClientHello
		if err := ParseClientHello(msg, &ch); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, tc)
		fps = append(fps, Compute(&ch, 't', Options{}))
		for i, b := range record(recHandshake, msg) {
			if i%16 == 0 {
				fmt.Fprintf(&dump, "\n%06x", i)
			}
			fmt.Fprintf(&dump, " %02x", b)
		}
		dump.WriteString("\n")
	}
	dir := t.TempDir()
	txt, pcap := filepath.Join(dir, "hellos.txt"), filepath.Join(dir, "hellos.pcap")
	if err := os.WriteFile(txt, []byte(dump.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("text2pcap", "-q", "-T", "50000,443", txt, pcap).CombinedOutput(); err != nil {
		t.Fatalf("text2pcap: %v\n%s", err, out)
	}
	out, err := exec.Command("tshark", "-o", "tcp.reassemble_out_of_order:TRUE", "-r", pcap,
		"-T", "fields", "-e", "tls.handshake.ja3_full", "-e", "tls.handshake.ja3").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(cases) {
		t.Fatalf("tshark printed %d lines for %d hellos", len(lines), len(cases))
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fields := strings.Split(lines[i], "\t")
			fp := fps[i]
			if len(fields) != 2 {
				t.Fatalf("tshark printed %q", lines[i])
			}
			if tc.name == "duplicate_extensions_first_wins" {
				// The spec keeps the first of a duplicated 10/11; tshark
				// (like Salesforce) keeps the last. The extension list
				// must still agree.
				if strings.Split(fields[0], ",")[2] != strings.Split(fp.JA3, ",")[2] {
					t.Errorf("extension field: tshark %s, ours %s", fields[0], fp.JA3)
				}
				return
			}
			if fields[0] != fp.JA3 || fields[1] != fp.JA3Hash {
				t.Errorf("tshark %s %s\n   ours %s %s", fields[0], fields[1], fp.JA3, fp.JA3Hash)
			}
		})
	}
}

//go:build integration

package quic

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	quicgo "github.com/quic-go/quic-go"

	"github.com/guardd/guardd/characteristics/tlsfp"
)

// TestJA3AgainstTshark captures quic-go's client Initials (v1 and v2, hellos
// over several Initials), wraps them as UDP packets with text2pcap, and
// checks that tshark's QUIC decryption yields the same JA3 as our
// reassembly. Needs tshark and text2pcap; skipped without them.
func TestJA3AgainstTshark(t *testing.T) {
	for _, tool := range []string{"tshark", "text2pcap"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	for _, v := range []quicgo.Version{quicgo.Version1, quicgo.Version2} {
		t.Run(v.String(), func(t *testing.T) {
			dgrams := captureClientInitials(t, v, "tshark.example.test")
			var f Flow
			var fp tlsfp.Fingerprint
			var dump strings.Builder
			for _, d := range dgrams {
				if h, ok := f.Handle(d); ok {
					var ch tlsfp.ClientHello
					if err := tlsfp.ParseClientHello(h, &ch); err != nil {
						t.Fatal(err)
					}
					fp = tlsfp.Compute(&ch, 'q', tlsfp.Options{})
				}
				for i, b := range d {
					if i%16 == 0 {
						fmt.Fprintf(&dump, "\n%06x", i)
					}
					fmt.Fprintf(&dump, " %02x", b)
				}
				dump.WriteString("\n")
			}
			if fp.JA3 == "" {
				t.Fatal("no hello")
			}
			dir := t.TempDir()
			txt, pcap := filepath.Join(dir, "q.txt"), filepath.Join(dir, "q.pcap")
			if err := os.WriteFile(txt, []byte(dump.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("text2pcap", "-q", "-u", "50000,443", txt, pcap).CombinedOutput(); err != nil {
				t.Fatalf("text2pcap: %v\n%s", err, out)
			}
			out, err := exec.Command("tshark", "-r", pcap, "-Y", "tls.handshake.type==1",
				"-T", "fields", "-e", "tls.handshake.ja3_full", "-e", "tls.handshake.ja3").Output()
			if err != nil {
				t.Fatalf("tshark: %v", err)
			}
			first := strings.Split(strings.TrimSpace(string(out)), "\n")[0]
			if want := fp.JA3 + "\t" + fp.JA3Hash; first != want {
				t.Errorf("tshark %q\n   ours %q", first, want)
			}
		})
	}
}

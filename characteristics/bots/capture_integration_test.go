//go:build integration

package bots_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/guardd/guardd/characteristics/bots"
	"github.com/guardd/guardd/ingest/sniff"
)

// TestCaptureMatchesTable runs testdata/capture.sh (root, tcpdump, openssl,
// curl, python3 with requests, chromium, go) and checks that the embedded
// table names every client's stack as it is installed here. It fails when a
// client's TLS stack changed: regenerate tls_clients.txt then.
func TestCaptureMatchesTable(t *testing.T) {
	for _, tool := range []string{"tcpdump", "openssl", "curl", "python3", "chromium", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Geteuid() != 0 {
				t.Skipf("%s not installed and not root", tool)
			}
			t.Fatalf("%s not installed (scripts/test.sh installs it)", tool)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("capturing on loopback needs root")
	}
	pcap := filepath.Join(t.TempDir(), "clients.pcap")
	cmd := exec.Command("sh", filepath.Join("testdata", "capture.sh"), pcap)
	cmd.Env = append(os.Environ(), "PORT=18543")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("capture.sh: %v\n%s", err, out)
	}
	want := map[string]string{
		"127.0.0.1": "browser/chromium", "127.0.0.2": "library/curl", "127.0.0.3": "library/python-urllib",
		"127.0.0.4": "library/python-requests", "127.0.0.5": "library/go-http",
	}
	seen := map[string]bool{}
	err := sniff.ReadFiles([]string{pcap}, sniff.Config{}, func(r *sniff.Record) {
		if r.Proto != "tls" {
			return
		}
		src := r.Src.String()
		seen[src] = true
		if got, _ := bots.DefaultStacks().Client(r.JA4); got != want[src] {
			t.Errorf("%s: JA4 %s is %q in the table, want %q", src, r.JA4, got, want[src])
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for src := range want {
		if !seen[src] {
			t.Errorf("no ClientHello from %s in the capture", src)
		}
	}
}

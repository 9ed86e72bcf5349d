//go:build integration

package capture

import (
	"encoding/binary"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"
)

// TestAgainstTshark reads the generated captures with tshark and checks that
// frame numbers, times and lengths agree. It needs tshark on PATH.
func TestAgainstTshark(t *testing.T) {
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark not installed (apt-get install -y tshark)")
	}
	ng, _ := pcapngFile(t)
	recs := []rec{{time: t0, data: pkt(1)}, {time: t0, data: pkt(2), length: 3000}}
	files := map[string][]byte{
		"pcapng":     ng,
		"pcap-be-ns": pcapFile(t, binary.BigEndian, true, layers.LinkTypeEthernet, recs),
		"pcap-le-us": pcapFile(t, binary.LittleEndian, false, layers.LinkTypeEthernet, recs),
	}
	paths := map[string]string{}
	for name, data := range files {
		paths[name] = writeTemp(t, name, data)
	}
	testdata, _ := filepath.Glob("testdata/*.pcap*")
	for _, p := range testdata {
		if !strings.HasSuffix(p, ".golden") {
			paths[p] = p
		}
	}
	for name, path := range paths {
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command("tshark", "-r", path, "-T", "fields", "-e", "frame.number", "-e", "frame.time_epoch", "-e", "frame.cap_len", "-e", "frame.len").Output()
			if err != nil {
				t.Fatalf("tshark: %v", err)
			}
			want := strings.Split(strings.TrimSpace(string(out)), "\n")
			var got []string
			for i, p := range readAll(t, path) {
				ts := fmt.Sprintf("%d.%09d", p.Time.Unix(), p.Time.Nanosecond())
				if i < len(want) && strings.Contains(want[i], "\t\t") {
					ts = "" // a simple packet block has no time; we repeat the previous one
				}
				got = append(got, fmt.Sprintf("%d\t%s\t%d\t%d", p.Frame, ts, p.CaptureLength, p.Length))
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("ours:\n%s\ntshark:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

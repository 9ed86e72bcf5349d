//go:build integration && linux

package capture

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/guardd/guardd/ingest/decap"
)

// TestTcpdumpFiles captures on lo of a throwaway namespace with tcpdump and
// dumpcap in each link type and file format they write, then reads the files
// back and decodes them. It needs root, ip, tcpdump and dumpcap.
func TestTcpdumpFiles(t *testing.T) {
	ns := netns(t)
	for _, tool := range []string{"tcpdump", "dumpcap"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (apt-get install -y tcpdump tshark)", tool)
		}
	}
	cases := []struct {
		name string
		args []string
		lt   layers.LinkType
	}{
		{"tcpdump lo ethernet", []string{"tcpdump", "--immediate-mode", "-Z", "root", "-i", "lo", "-U"}, layers.LinkTypeEthernet},
		{"tcpdump any sll2", []string{"tcpdump", "--immediate-mode", "-Z", "root", "-i", "any", "-U"}, layers.LinkTypeLinuxSLL2},
		{"tcpdump any sll", []string{"tcpdump", "--immediate-mode", "-Z", "root", "-i", "any", "-y", "LINUX_SLL", "-U"}, layers.LinkTypeLinuxSLL},
		{"tcpdump nano", []string{"tcpdump", "--immediate-mode", "-Z", "root", "-i", "lo", "-U", "--time-stamp-precision=nano"}, layers.LinkTypeEthernet},
		{"dumpcap pcapng", []string{"dumpcap", "-q", "-i", "lo"}, layers.LinkTypeEthernet},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.cap") // the name says nothing of the format
			args := append([]string{"netns", "exec", ns}, c.args...)
			args = append(args, "-w", path, "udp port 9999")
			cmd := exec.Command("ip", args...)
			stderr, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			ready := make(chan struct{})
			go func() {
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					if l := sc.Text(); strings.Contains(l, "listening on") || strings.Contains(l, "Capturing on") {
						close(ready)
						break
					}
				}
				for sc.Scan() {
				}
			}()
			select {
			case <-ready:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatal("capture tool did not start")
			}
			time.Sleep(300 * time.Millisecond)
			var conn net.Conn
			var err error
			inNetns(t, ns, func() { conn, err = net.Dial("udp4", "127.0.0.1:9999") })
			if err != nil {
				t.Fatal(err)
			}
			conn.Write([]byte("from-" + c.args[0]))
			conn.Close()
			time.Sleep(500 * time.Millisecond)
			cmd.Process.Signal(syscall.SIGINT)
			cmd.Wait()

			src, err := OpenFile(path)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			d := decap.NewDecoder(decap.Config{})
			var p Packet
			found := 0
			for {
				if err := src.ReadPacket(&p); err != nil {
					if err != io.EOF {
						t.Error(err)
					}
					break
				}
				if p.LinkType != c.lt {
					t.Errorf("frame %d link type %v, want %v", p.Frame, p.LinkType, c.lt)
				}
				var dp decap.Packet
				if err := d.Decode(p.Data, p.LinkType, &dp); err != nil {
					if !errors.Is(err, decap.ErrNotTransport) {
						t.Errorf("frame %d: %v", p.Frame, err)
					}
					continue
				}
				if string(dp.Payload) == "from-"+c.args[0] && dp.DstPort == 9999 {
					found++
				}
			}
			if found != 1 {
				t.Errorf("datagram found %d times, want 1", found)
			}
		})
	}
}

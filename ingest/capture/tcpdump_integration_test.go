//go:build integration && linux

package capture

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/guardd/guardd/ingest/decap"
	"github.com/guardd/guardd/testwait"
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
			// Unconnected: nothing listens on 9999, and a connected socket
			// would fail the write after a port unreachable.
			var conn net.PacketConn
			var err error
			inNetns(t, ns, func() { conn, err = net.ListenPacket("udp4", "127.0.0.1:0") })
			if err != nil {
				t.Fatal(err)
			}
			to := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9999}
			// Both tools write each packet as it comes (tcpdump -U,
			// dumpcap always), but dumpcap says "Capturing on" before its
			// filter is attached: probe until the file holds a probe, then
			// send the datagram once and stop the tool when it is written.
			probe, payload := []byte("probe"), []byte("from-"+c.args[0])
			written := func(b []byte) func() bool {
				return func() bool {
					f, _ := os.ReadFile(path)
					return bytes.Contains(f, b)
				}
			}
			testwait.Until(t, 20*time.Second, c.args[0]+" to capture a probe", func() bool {
				conn.WriteTo(probe, to)
				return testwait.For(50*time.Millisecond, written(probe))
			})
			if _, err := conn.WriteTo(payload, to); err != nil {
				t.Fatal(err)
			}
			conn.Close()
			testwait.Until(t, 20*time.Second, c.args[0]+" to write the datagram to its file", written(payload))
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

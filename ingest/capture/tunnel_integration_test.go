//go:build integration && linux

package capture

import (
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	"github.com/guardd/guardd/ingest/decap"
	"github.com/guardd/guardd/testwait"
)

// TestKernelTunnels builds two namespaces joined by a veth pair, runs each
// tunnel type the kernel offers between them, captures the underlay with a
// LiveSource and checks that Decode finds the inner datagram behind the
// right layers. This checks the ERSPAN, GRE, VXLAN and GENEVE layouts
// against the kernel's, not against our own reading of the specs. Kinds
// whose kernel module is missing are skipped. It needs root and ip.
func TestKernelTunnels(t *testing.T) {
	a, b := vethPair(t, 1500)
	type kind struct {
		name  string
		args  []string // after "type"
		v6    bool     // inner IPv6 (sit)
		encap uint16
	}
	kinds := []kind{
		{"vxlan", []string{"vxlan", "id", "42", "dstport", "4789"}, false, decap.EncapVXLAN},
		{"vxlan-8472", []string{"vxlan", "id", "43", "dstport", "8472"}, false, decap.EncapVXLAN},
		{"geneve", []string{"geneve", "id", "44"}, false, decap.EncapGENEVE},
		{"gretap", []string{"gretap"}, false, decap.EncapGRE},
		{"gre-key-csum-seq", []string{"gre", "key", "7", "csum", "seq"}, false, decap.EncapGRE},
		{"ipip", []string{"ipip"}, false, decap.EncapIPinIP},
		{"sit", []string{"sit"}, true, decap.EncapIPinIP},
		{"erspan-ii", []string{"erspan", "seq", "key", "10", "erspan_ver", "1", "erspan", "123"}, false, decap.EncapGRE | decap.EncapERSPAN2},
		{"erspan-iii", []string{"erspan", "seq", "key", "11", "erspan_ver", "2", "erspan_dir", "ingress", "erspan_hwid", "7"}, false, decap.EncapGRE | decap.EncapERSPAN3},
	}
	var src *LiveSource
	var err error
	inNetns(t, a, func() { src, err = OpenLive(LiveConfig{Interface: "vA", ReadTimeout: 500 * time.Millisecond}) })
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	d := decap.NewDecoder(decap.Config{})
	for i, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			dev := fmt.Sprintf("t%d", i)
			peer := map[string]string{a: "10.99.0.2", b: "10.99.0.1"}
			for n, ns := range []string{a, b} {
				local := map[string]string{a: "10.99.0.1", b: "10.99.0.2"}[ns]
				args := append([]string{"-n", ns, "link", "add", dev, "type"}, k.args...)
				args = append(args, "remote", peer[ns])
				if k.args[0] != "geneve" {
					args = append(args, "local", local)
				}
				if err := ipCmd(args...); err != nil {
					t.Skip(err)
				}
				addr := fmt.Sprintf("192.168.%d.%d/24", 100+i, n+1)
				if k.v6 {
					addr = fmt.Sprintf("fd00:%d::%d/64", 100+i, n+1)
				}
				if err := ipCmd("-n", ns, "addr", "add", addr, "dev", dev, "nodad"); err != nil {
					t.Fatal(err)
				}
				if err := ipCmd("-n", ns, "link", "set", dev, "up"); err != nil {
					t.Fatal(err)
				}
			}
			dst := fmt.Sprintf("192.168.%d.2:9999", 100+i)
			if k.v6 {
				dst = fmt.Sprintf("[fd00:%d::2]:9999", 100+i)
			}
			msg := "via-" + k.name
			// Unconnected: nothing listens on 9999, and a connected socket
			// would fail the write after a port unreachable.
			var c net.PacketConn
			inNetns(t, a, func() { c, err = net.ListenPacket("udp", ":0") })
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			to, err := net.ResolveUDPAddr("udp", dst)
			if err != nil {
				t.Fatal(err)
			}
			found := 0
			var p Packet
			// Send, then read until the capture goes quiet; again until a
			// datagram is decoded (the first may wait for ARP).
			testwait.Until(t, 20*time.Second, "a "+msg+" datagram decoded from the underlay", func() bool {
				if _, err := c.WriteTo([]byte(msg), to); err != nil {
					t.Fatal(err)
				}
				readQuiet(t, src, d, &p, msg, k.encap, &found)
				return found > 0
			})
		})
	}
	if os.Getenv("GUARDD_KEEP_NETNS") != "" {
		t.Log("namespaces", a, b)
	}
}

// readQuiet reads src until its read timeout passes without a packet,
// counting in found the datagrams carrying msg, and checks their encap.
func readQuiet(t *testing.T, src *LiveSource, d *decap.Decoder, p *Packet, msg string, encap uint16, found *int) {
	t.Helper()
	for {
		err := src.ReadPacket(p)
		if errors.Is(err, ErrTimeout) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		var dp decap.Packet
		if err := d.Decode(p.Data, p.LinkType, &dp); err != nil {
			if !errors.Is(err, decap.ErrNotTransport) {
				t.Errorf("frame %d: %v\n%x", p.Frame, err, p.Data)
			}
			continue
		}
		if string(dp.Payload) != msg {
			continue
		}
		*found++
		if dp.Encap&^(decap.EncapIPv6Ext) != encap || dp.DstPort != 9999 {
			t.Errorf("encap %#x port %d, want encap %#x port 9999\n%x", dp.Encap, dp.DstPort, encap, p.Data)
		}
	}
}

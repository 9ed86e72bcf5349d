package capture

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"golang.org/x/net/bpf"
)

func frame(t *testing.T, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), buf.Bytes()...)
}

func vm(t *testing.T, lt layers.LinkType) *bpf.VM {
	t.Helper()
	raw, err := DefaultFilter(lt, 1000)
	if err != nil {
		t.Fatal(err)
	}
	ins, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("filter does not disassemble")
	}
	v, err := bpf.NewVM(ins)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestDefaultFilter(t *testing.T) {
	mac := net.HardwareAddr{2, 0, 0, 0, 0, 1}
	eth := func(et layers.EthernetType) *layers.Ethernet {
		return &layers.Ethernet{SrcMAC: mac, DstMAC: mac, EthernetType: et}
	}
	v4 := func(p layers.IPProtocol) *layers.IPv4 {
		return &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: p, SrcIP: net.IP{10, 0, 0, 1}, DstIP: net.IP{10, 0, 0, 2}}
	}
	v6 := func(p layers.IPProtocol) *layers.IPv6 {
		return &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: p, SrcIP: net.ParseIP("2001:db8::1"), DstIP: net.ParseIP("2001:db8::2")}
	}
	v4opts := v4(layers.IPProtocolTCP)
	v4opts.Options = []layers.IPv4Option{{OptionType: 1}, {OptionType: 1}, {OptionType: 1}, {OptionType: 0}}
	frag := v4(layers.IPProtocolTCP)
	frag.FragOffset = 100
	tcp := func(syn, fin bool) *layers.TCP {
		return &layers.TCP{SrcPort: 40000, DstPort: 443, ACK: true, SYN: syn, FIN: fin, Window: 100}
	}
	withOpts := &layers.TCP{SrcPort: 40000, DstPort: 443, ACK: true, Options: []layers.TCPOption{{OptionType: 8, OptionLength: 10, OptionData: make([]byte, 8)}}}
	data := gopacket.Payload("hello")
	dot1q := func(et layers.EthernetType) *layers.Dot1Q { return &layers.Dot1Q{VLANIdentifier: 7, Type: et} }
	tso := frame(t, eth(layers.EthernetTypeIPv4), v4(layers.IPProtocolTCP), tcp(false, false), data)
	tso[16], tso[17] = 0, 0
	cases := []struct {
		name  string
		lt    layers.LinkType
		frame []byte
		pass  bool
	}{
		{"tcp payload", layers.LinkTypeEthernet, frame(t, eth(layers.EthernetTypeIPv4), v4(layers.IPProtocolTCP), tcp(false, false), data), true},
		{"tcp pure ack", layers.LinkTypeEthernet, frame(t, eth(layers.EthernetTypeIPv4), v4(layers.IPProtocolTCP), tcp(false, false)), false},
		{"tcp ack with options only", layers.LinkTypeEthernet, frame(t, eth(layers.EthernetTypeIPv4), v4opts, withOpts), false},
		{"tcp ip options payload", layers.LinkTypeEthernet, frame(t, eth(layers.EthernetTypeIPv4), v4opts, withOpts, data), true},
		{"tcp syn", layers.LinkTypeEthernet, frame(t, eth(layers.EthernetTypeIPv4), v4(layers.IPProtocolTCP), tcp(true, false)), true},
		{"tcp fin", layers.LinkTypeEthernet, frame(t, eth(layers.EthernetTypeIPv4), v4(layers.IPProtocolTCP), tcp(false, true)), true},
		{"tcp tso", layers.LinkTypeEthernet, tso, true},
		{"ipv4 later fragment", layers.LinkTypeEthernet, frame(t, eth(layers.EthernetTypeIPv4), frag, data), true},
		{"udp", layers.LinkTypeEthernet, frame(t, eth(layers.EthernetTypeIPv4), v4(layers.IPProtocolUDP), &layers.UDP{SrcPort: 1, DstPort: 443}, data), true},
		{"icmp", layers.LinkTypeEthernet, frame(t, eth(layers.EthernetTypeIPv4), v4(layers.IPProtocolICMPv4), data), false},
		{"gre", layers.LinkTypeEthernet, frame(t, eth(layers.EthernetTypeIPv4), v4(layers.IPProtocolGRE), data), true},
		{"arp", layers.LinkTypeEthernet, frame(t, eth(layers.EthernetTypeARP), data), false},
		{"pppoe session", layers.LinkTypeEthernet, frame(t, eth(layers.EthernetTypePPPoESession), data), true},
		{"pppoe discovery", layers.LinkTypeEthernet, frame(t, eth(layers.EthernetTypePPPoEDiscovery), data), false},
		{"mpls", layers.LinkTypeEthernet, frame(t, eth(layers.EthernetTypeMPLSUnicast), data), true},
		{"ipv6 tcp payload", layers.LinkTypeEthernet, frame(t, eth(layers.EthernetTypeIPv6), v6(layers.IPProtocolTCP), tcp(false, false), data), true},
		{"ipv6 tcp pure ack", layers.LinkTypeEthernet, frame(t, eth(layers.EthernetTypeIPv6), v6(layers.IPProtocolTCP), tcp(false, false)), false},
		{"ipv6 tcp syn", layers.LinkTypeEthernet, frame(t, eth(layers.EthernetTypeIPv6), v6(layers.IPProtocolTCP), tcp(true, false)), true},
		{"ipv6 udp", layers.LinkTypeEthernet, frame(t, eth(layers.EthernetTypeIPv6), v6(layers.IPProtocolUDP), &layers.UDP{SrcPort: 1, DstPort: 443}, data), true},
		{"ipv6 fragment header", layers.LinkTypeEthernet, frame(t, eth(layers.EthernetTypeIPv6), v6(layers.IPProtocolIPv6Fragment), data), true},
		{"ipv6 icmp", layers.LinkTypeEthernet, frame(t, eth(layers.EthernetTypeIPv6), v6(layers.IPProtocolICMPv6), data), false},
		{"vlan tcp payload", layers.LinkTypeEthernet, frame(t, eth(layers.EthernetTypeDot1Q), dot1q(layers.EthernetTypeIPv4), v4(layers.IPProtocolTCP), tcp(false, false), data), true},
		{"vlan tcp pure ack", layers.LinkTypeEthernet, frame(t, eth(layers.EthernetTypeDot1Q), dot1q(layers.EthernetTypeIPv4), v4(layers.IPProtocolTCP), tcp(false, false)), false},
		{"qinq ipv6 udp", layers.LinkTypeEthernet, frame(t, eth(layers.EthernetTypeQinQ), dot1q(layers.EthernetTypeDot1Q), dot1q(layers.EthernetTypeIPv6), v6(layers.IPProtocolUDP), &layers.UDP{}, data), true},
		{"qinq tcp pure ack", layers.LinkTypeEthernet, frame(t, eth(layers.EthernetTypeQinQ), dot1q(layers.EthernetTypeDot1Q), dot1q(layers.EthernetTypeIPv4), v4(layers.IPProtocolTCP), tcp(false, false)), false},
		{"vlan arp", layers.LinkTypeEthernet, frame(t, eth(layers.EthernetTypeDot1Q), dot1q(layers.EthernetTypeARP), data), false},
		{"raw tcp payload", layers.LinkTypeRaw, frame(t, v4(layers.IPProtocolTCP), tcp(false, false), data), true},
		{"raw tcp pure ack", layers.LinkTypeRaw, frame(t, v4(layers.IPProtocolTCP), tcp(false, false)), false},
		{"raw ipv6 tcp payload", layers.LinkTypeRaw, frame(t, v6(layers.IPProtocolTCP), tcp(false, false), data), true},
		{"raw ipv6 udp", layers.LinkTypeRaw, frame(t, v6(layers.IPProtocolUDP), &layers.UDP{}, data), true},
		{"raw not ip", layers.LinkTypeRaw, []byte{0x00, 1, 2, 3}, false},
		{"short frame", layers.LinkTypeEthernet, []byte{1, 2, 3}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, err := vm(t, c.lt).Run(c.frame)
			if err != nil {
				t.Fatal(err)
			}
			if (n > 0) != c.pass {
				t.Errorf("filter kept %d bytes; want pass=%v", n, c.pass)
			}
			if n > 0 && n != 1000 {
				t.Errorf("kept %d bytes, want the snaplen 1000", n)
			}
		})
	}
}

func TestParseFilter(t *testing.T) {
	// tcpdump -ddd -i lo udp (abridged)
	good := "4\n40 0 0 12\n21 0 1 2048\n6 0 0 262144\n6 0 0 0\n"
	got, err := ParseFilter(good)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[1] != (bpf.RawInstruction{Op: 21, Jt: 0, Jf: 1, K: 2048}) {
		t.Errorf("got %v", got)
	}
	if _, err := ParseFilter(strings.ReplaceAll(strings.TrimSpace(good), "\n", ",")); err != nil {
		t.Errorf("comma form: %v", err)
	}
	for _, bad := range []string{"", "3\n6 0 0 0\n", "1\n6 0 0\n", "1\n6 0 x 0\n", "1\n6 0 256 0\n"} {
		if _, err := ParseFilter(bad); err == nil {
			t.Errorf("ParseFilter(%q): no error", bad)
		}
	}
}

// TestCompileFilter runs tcpdump to compile an expression for lo.
func TestCompileFilter(t *testing.T) {
	if _, err := exec.LookPath("tcpdump"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs tcpdump and root")
	}
	prog, err := compileFilter("udp port 53", "lo", 65535)
	if err != nil {
		t.Fatal(err)
	}
	ins, _ := bpf.Disassemble(prog)
	v, err := bpf.NewVM(ins)
	if err != nil {
		t.Fatal(err)
	}
	dns := frame(t, &layers.Ethernet{SrcMAC: make(net.HardwareAddr, 6), DstMAC: make(net.HardwareAddr, 6), EthernetType: layers.EthernetTypeIPv4},
		&layers.IPv4{Version: 4, IHL: 5, Protocol: layers.IPProtocolUDP, SrcIP: net.IP{127, 0, 0, 1}, DstIP: net.IP{127, 0, 0, 1}}, &layers.UDP{SrcPort: 5000, DstPort: 53})
	if n, _ := v.Run(dns); n == 0 {
		t.Error("udp port 53 filter drops a DNS packet")
	}
	if _, err := compileFilter("not a ( filter", "lo", 65535); err == nil || !strings.Contains(err.Error(), "tcpdump") {
		t.Errorf("bad expression: %v", err)
	}
	if _, err := compileFilter("udp", "any", 65535); err == nil {
		t.Error("expression on any: no error")
	}
}

package capture

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/gopacket/gopacket/layers"
	"golang.org/x/net/bpf"
)

// DefaultFilter returns the classic BPF program LiveSource attaches when
// LiveConfig.BPF is empty, for frames of link type lt (Ethernet, or raw IP
// for SOCK_DGRAM sockets), keeping snaplen bytes of each frame it passes.
//
// It passes what fingerprinting needs and drops the bulk of the rest:
//   - UDP (QUIC Initials, and VXLAN/GENEVE tunnels);
//   - TCP segments with a payload, with SYN, FIN or RST, or with an IPv4 total
//     length of 0 (TSO); pure ACKs are dropped;
//   - IPv4 non-first fragments and IPv6 fragment/extension headers, GRE,
//     IP-in-IP, MPLS and PPPoE, whose inner headers a short filter cannot
//     reach;
//   - behind up to two VLAN tags (the kernel usually strips the outer one
//     before the filter runs).
func DefaultFilter(lt layers.LinkType, snaplen int) ([]bpf.RawInstruction, error) {
	a := &asm{labels: map[string]int{}}
	switch lt {
	case layers.LinkTypeEthernet:
		a.ethernet()
	case layers.LinkTypeRaw:
		a.emit(bpf.LoadAbsolute{Off: 0, Size: 1})
		a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpShiftRight, Val: 4})
		a.jeq(4, "ip4_0", "")
		a.jeq(6, "ip6_0", "drop")
		a.ipv4(0)
		a.ipv6(0)
	default:
		return nil, fmt.Errorf("capture: no default filter for link type %v", lt)
	}
	a.label("accept")
	a.emit(bpf.RetConstant{Val: uint32(snaplen)})
	a.label("drop")
	a.emit(bpf.RetConstant{Val: 0})
	return a.assemble()
}

// asm is a tiny assembler with named jump targets; "" falls through.
type asm struct {
	ins    []bpf.Instruction
	jumps  []jump
	labels map[string]int
}

type jump struct {
	at          int
	true, false string
}

func (a *asm) emit(i bpf.Instruction) { a.ins = append(a.ins, i) }
func (a *asm) label(name string)      { a.labels[name] = len(a.ins) }

func (a *asm) cond(c bpf.JumpTest, v uint32, t, f string) {
	a.jumps = append(a.jumps, jump{len(a.ins), t, f})
	a.emit(bpf.JumpIf{Cond: c, Val: v})
}

func (a *asm) jeq(v uint32, t, f string)  { a.cond(bpf.JumpEqual, v, t, f) }
func (a *asm) jset(v uint32, t, f string) { a.cond(bpf.JumpBitsSet, v, t, f) }
func (a *asm) jgt(v uint32, t, f string)  { a.cond(bpf.JumpGreaterThan, v, t, f) }

func (a *asm) assemble() ([]bpf.RawInstruction, error) {
	for _, j := range a.jumps {
		skip := func(l string) (uint8, error) {
			if l == "" {
				return 0, nil
			}
			to, ok := a.labels[l]
			if !ok || to <= j.at || to-j.at-1 > 255 {
				return 0, fmt.Errorf("capture: filter jump to %q out of range", l)
			}
			return uint8(to - j.at - 1), nil
		}
		in := a.ins[j.at].(bpf.JumpIf)
		var err1, err2 error
		in.SkipTrue, err1 = skip(j.true)
		in.SkipFalse, err2 = skip(j.false)
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		a.ins[j.at] = in
	}
	return bpf.Assemble(a.ins)
}

func (a *asm) ethernet() {
	// Untagged, then one tag, then two.
	for i, off := range []uint32{12, 16, 20} {
		if i > 0 {
			a.label("tag" + strconv.Itoa(i))
		}
		l3 := off + 2
		a.emit(bpf.LoadAbsolute{Off: off, Size: 2})
		a.jeq(0x0800, "ip4_"+strconv.Itoa(int(l3)), "")
		a.jeq(0x86dd, "ip6_"+strconv.Itoa(int(l3)), "")
		a.jeq(0x8847, "accept", "") // MPLS
		a.jeq(0x8864, "accept", "") // PPPoE session
		if i == 2 {                 // a third tag: give up
			a.emit(bpf.RetConstant{Val: 0})
			continue
		}
		next := "tag" + strconv.Itoa(i+1)
		a.jeq(0x8100, next, "")
		a.jeq(0x88a8, next, "")
		a.jeq(0x9100, next, "drop")
	}
	for _, l3 := range []uint32{14, 18, 22} {
		a.ipv4(l3)
		a.ipv6(l3)
	}
}

// ipv4 emits the IPv4 checks for a header at offset o.
func (a *asm) ipv4(o uint32) {
	p := "ip4_" + strconv.Itoa(int(o))
	a.label(p)
	a.emit(bpf.LoadAbsolute{Off: o + 9, Size: 1})
	a.jeq(17, "accept", "")
	a.jeq(6, p+"tcp", "")
	a.jeq(47, "accept", "")
	a.jeq(4, "accept", "")
	a.jeq(41, "accept", "")
	a.jeq(137, "accept", "drop")
	a.label(p + "tcp")
	a.emit(bpf.LoadAbsolute{Off: o + 6, Size: 2})
	a.jset(0x1fff, "accept", "") // a non-first fragment: no TCP header here
	a.emit(bpf.LoadMemShift{Off: o})
	a.emit(bpf.LoadIndirect{Off: o + 13, Size: 1})
	a.jset(0x07, "accept", "") // FIN, SYN or RST
	a.emit(bpf.LoadAbsolute{Off: o + 2, Size: 2})
	a.jeq(0, "accept", "") // TSO: total length 0
	a.emit(bpf.ALUOpX{Op: bpf.ALUOpSub})
	a.emit(bpf.StoreScratch{Src: bpf.RegA, N: 0})
	a.emit(bpf.LoadIndirect{Off: o + 12, Size: 1})
	a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpShiftRight, Val: 4})
	a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpShiftLeft, Val: 2})
	a.emit(bpf.TAX{})
	a.emit(bpf.LoadScratch{Dst: bpf.RegA, N: 0})
	a.emit(bpf.ALUOpX{Op: bpf.ALUOpSub})
	a.jgt(0, "accept", "drop")
}

// ipv6 emits the IPv6 checks for a header at offset o.
func (a *asm) ipv6(o uint32) {
	p := "ip6_" + strconv.Itoa(int(o))
	a.label(p)
	a.emit(bpf.LoadAbsolute{Off: o + 6, Size: 1})
	a.jeq(17, "accept", "")
	a.jeq(6, p+"tcp", "")
	for _, nh := range []uint32{0, 43, 44, 60, 51, 47, 4, 41} {
		a.jeq(nh, "accept", "")
	}
	a.jeq(137, "accept", "drop")
	a.label(p + "tcp")
	a.emit(bpf.LoadAbsolute{Off: o + 40 + 13, Size: 1})
	a.jset(0x07, "accept", "")
	a.emit(bpf.LoadAbsolute{Off: o + 4, Size: 2})
	a.jeq(0, "accept", "")
	a.emit(bpf.StoreScratch{Src: bpf.RegA, N: 0})
	a.emit(bpf.LoadAbsolute{Off: o + 40 + 12, Size: 1})
	a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpShiftRight, Val: 4})
	a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpShiftLeft, Val: 2})
	a.emit(bpf.TAX{})
	a.emit(bpf.LoadScratch{Dst: bpf.RegA, N: 0})
	a.emit(bpf.ALUOpX{Op: bpf.ALUOpSub})
	a.jgt(0, "accept", "drop")
}

// skipLoopbackEcho prefixes prog with a check dropping the outgoing copy of
// frames on the loopback interface: AF_PACKET sees each of them twice, as
// sent and as received, and libpcap drops the first copy the same way.
func skipLoopbackEcho(prog []bpf.RawInstruction, loIndex uint32) ([]bpf.RawInstruction, error) {
	pre, err := bpf.Assemble([]bpf.Instruction{
		bpf.LoadExtension{Num: bpf.ExtType},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 4, SkipFalse: 3}, // PACKET_OUTGOING
		bpf.LoadExtension{Num: bpf.ExtInterfaceIndex},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: loIndex, SkipFalse: 1},
		bpf.RetConstant{Val: 0},
	})
	if err != nil {
		return nil, err
	}
	return append(pre, prog...), nil
}

// ParseFilter reads a classic BPF program in `tcpdump -ddd` form: the
// instruction count, then one "code jt jf k" line per instruction. Commas
// may replace the newlines (iptables' bpf match form).
func ParseFilter(s string) ([]bpf.RawInstruction, error) {
	lines := strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == ',' })
	if len(lines) == 0 {
		return nil, errors.New("capture: empty filter program")
	}
	n, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || n != len(lines)-1 || n == 0 || n > 4096 {
		return nil, fmt.Errorf("capture: filter program: first line %q is not the count of the %d instructions that follow", lines[0], len(lines)-1)
	}
	out := make([]bpf.RawInstruction, n)
	for i, l := range lines[1:] {
		f := strings.Fields(l)
		var v [4]uint64
		if len(f) != 4 {
			return nil, fmt.Errorf("capture: filter program line %d: %q: want 4 numbers", i+2, l)
		}
		for j, bits := range []int{16, 8, 8, 32} {
			if v[j], err = strconv.ParseUint(f[j], 0, bits); err != nil {
				return nil, fmt.Errorf("capture: filter program line %d: %q: %w", i+2, l, err)
			}
		}
		out[i] = bpf.RawInstruction{Op: uint16(v[0]), Jt: uint8(v[1]), Jf: uint8(v[2]), K: uint32(v[3])}
	}
	return out, nil
}

// compileFilter turns LiveConfig.BPF into a program: `tcpdump -ddd` output
// as it is, or a tcpdump expression compiled by running tcpdump for the
// interface (Go has no pcap_compile without cgo).
func compileFilter(expr, iface string, snaplen int) ([]bpf.RawInstruction, error) {
	if t := strings.TrimSpace(expr); t != "" && t[0] >= '0' && t[0] <= '9' && strings.ContainsAny(t, "\n,") {
		return ParseFilter(t)
	}
	if iface == "" || iface == "any" {
		return nil, errors.New("capture: a filter expression needs a named interface (or give `tcpdump -ddd` output)")
	}
	path, err := exec.LookPath("tcpdump")
	if err != nil {
		return nil, fmt.Errorf("capture: compiling filter %q needs tcpdump (or give `tcpdump -ddd` output): %w", expr, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, "-i", iface, "-s", strconv.Itoa(snaplen), "-ddd", "--", expr)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("capture: tcpdump filter %q: %w: %s", expr, err, strings.TrimSpace(stderr.String()))
	}
	return ParseFilter(string(out))
}

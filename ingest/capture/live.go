package capture

import (
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopacket/gopacket/afpacket"
	"github.com/gopacket/gopacket/layers"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// LiveConfig sets up a live capture. The zero value captures on every
// interface with the default filter.
type LiveConfig struct {
	// Interface to capture on; "" or "any" means every interface (then
	// frames arrive without their link header, as LinkTypeRaw).
	Interface string
	// FanoutGroup, when not 0, joins a PACKET_FANOUT_HASH group (with
	// kernel IPv4 defragmentation for hashing): sources opened with the same
	// group share the traffic, each flow going to one of them.
	FanoutGroup uint16
	// BPF is a tcpdump filter expression (compiled by running tcpdump for
	// Interface), or `tcpdump -ddd` output. "" means DefaultFilter, which
	// passes only what fingerprinting needs.
	BPF string
	// SnapLen is the most bytes kept of each frame. 0 means
	// MaxCaptureLength (262144, as tcpdump): on the host that terminates the
	// connections, TSO/GSO and BIG TCP frames exceed 65535 bytes, and a cut
	// segment is a hole in the stream. The kernel copies only what arrived.
	SnapLen int
	// BlockSize and NumBlocks size the TPACKET_V3 ring: BlockSize is a
	// multiple of the page size, at least SnapLen plus headers. 0 means
	// 1 MiB and 64 blocks.
	BlockSize, NumBlocks int
	// ReadTimeout, when positive, makes ReadPacket return ErrTimeout after
	// that long without a packet, so a caller can run timers; 0 blocks.
	ReadTimeout time.Duration
	// Promiscuous puts the interface in promiscuous mode (mirror ports).
	Promiscuous bool
}

// ErrTimeout is returned by LiveSource.ReadPacket when LiveConfig.ReadTimeout
// passed without a packet.
var ErrTimeout = errors.New("capture: read timeout")

// pollInterval bounds how long Close waits for a blocked ReadPacket.
const pollInterval = 100 * time.Millisecond

// LiveSource reads packets from a Linux AF_PACKET TPACKET_V3 ring. ReadPacket
// is for one goroutine; Close and Stats may be called from any.
//
// A ring of the default size holds about 100 000 average frames; a reader
// that falls further behind makes the kernel drop (see Stats).
type LiveSource struct {
	iface    string
	linkType layers.LinkType
	timeout  time.Duration
	closing  atomic.Bool

	mu    sync.Mutex // held while reading the ring and closing it
	tp    *afpacket.TPacket
	frame int
	buf   []byte

	statsMu         sync.Mutex
	received, drops uint64
}

func (c LiveConfig) withDefaults() (LiveConfig, error) {
	if c.Interface == "any" {
		c.Interface = ""
	}
	if c.SnapLen == 0 {
		c.SnapLen = MaxCaptureLength
	}
	if c.BlockSize == 0 {
		c.BlockSize = 1 << 20
	}
	if c.NumBlocks == 0 {
		c.NumBlocks = 64
	}
	page := os.Getpagesize()
	switch {
	case c.SnapLen < 64 || c.SnapLen > MaxCaptureLength:
		return c, fmt.Errorf("capture: snaplen %d: want 64 to %d", c.SnapLen, MaxCaptureLength)
	case c.BlockSize%page != 0 || c.BlockSize < c.SnapLen+256:
		return c, fmt.Errorf("capture: block size %d: want a multiple of the page size (%d) of at least snaplen+256 (%d)", c.BlockSize, page, c.SnapLen+256)
	case c.NumBlocks < 1 || int64(c.NumBlocks)*int64(c.BlockSize) > 4<<30:
		return c, fmt.Errorf("capture: %d blocks of %d bytes: want 1 or more blocks and a ring of at most 4 GiB", c.NumBlocks, c.BlockSize)
	case c.ReadTimeout < 0:
		return c, fmt.Errorf("capture: negative read timeout %v", c.ReadTimeout)
	}
	return c, nil
}

// linkTypeOf says how frames of an interface arrive: Ethernet and loopback
// devices keep their Ethernet header on a SOCK_RAW socket; anything else
// (every interface at once, tun, ipip, gre devices) is read on a SOCK_DGRAM
// socket, which starts frames at the network header.
func linkTypeOf(iface string) (layers.LinkType, afpacket.OptSocketType, error) {
	if iface == "" {
		return layers.LinkTypeRaw, afpacket.SocketDgram, nil
	}
	if _, err := net.InterfaceByName(iface); err != nil {
		return 0, 0, fmt.Errorf("capture: interface %q: %w", iface, err)
	}
	// SIOCGIFHWADDR gives the ARPHRD type; unlike /sys/class/net it answers
	// for the calling thread's network namespace.
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, 0, fmt.Errorf("capture: interface %q type: %w", iface, err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(iface)
	if err != nil {
		return 0, 0, fmt.Errorf("capture: interface %q: %w", iface, err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFHWADDR, ifr); err != nil {
		return 0, 0, fmt.Errorf("capture: interface %q type: %w", iface, err)
	}
	switch ifr.Uint16() {
	case unix.ARPHRD_ETHER, unix.ARPHRD_LOOPBACK:
		return layers.LinkTypeEthernet, afpacket.SocketRaw, nil
	}
	return layers.LinkTypeRaw, afpacket.SocketDgram, nil
}

// loopbackIndex is the index of the loopback interface (1 in every Linux
// network namespace).
func loopbackIndex() uint32 {
	ifs, err := net.Interfaces()
	if err == nil {
		for _, i := range ifs {
			if i.Flags&net.FlagLoopback != 0 {
				return uint32(i.Index)
			}
		}
	}
	return 1
}

// OpenLive opens a capture on cfg.Interface. It needs CAP_NET_RAW.
//
// The socket is bound to the interface before the filter is attached, so
// the first few frames may not have passed the filter; Decode copes.
func OpenLive(cfg LiveConfig) (*LiveSource, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	lt, socktype, err := linkTypeOf(cfg.Interface)
	if err != nil {
		return nil, err
	}
	var filter []bpf.RawInstruction
	if cfg.BPF == "" {
		filter, err = DefaultFilter(lt, cfg.SnapLen)
	} else {
		filter, err = compileFilter(cfg.BPF, cfg.Interface, cfg.SnapLen)
	}
	if err != nil {
		return nil, err
	}
	if filter, err = skipLoopbackEcho(filter, loopbackIndex()); err != nil {
		return nil, err
	}
	name := cfg.Interface
	if name == "" {
		name = "any"
	}
	poll := pollInterval
	if cfg.ReadTimeout > 0 {
		poll = min(poll, cfg.ReadTimeout)
	}
	tp, err := afpacket.NewTPacket(
		afpacket.OptInterface(cfg.Interface),
		afpacket.OptTPacketVersion(afpacket.TPacketVersion3),
		afpacket.OptSocketType(socktype),
		afpacket.OptBlockSize(cfg.BlockSize),
		afpacket.OptNumBlocks(cfg.NumBlocks),
		afpacket.OptFrameSize(os.Getpagesize()),
		afpacket.OptBlockTimeout(10*time.Millisecond),
		afpacket.OptPollTimeout(max(poll, time.Millisecond)),
	)
	if err != nil {
		return nil, fmt.Errorf("capture: %s: af_packet ring: %w", name, err)
	}
	l := &LiveSource{iface: name, linkType: lt, timeout: cfg.ReadTimeout, tp: tp, buf: make([]byte, 0, 64<<10)}
	if err := tp.SetBPF(filter); err != nil {
		tp.Close()
		return nil, fmt.Errorf("capture: %s: attach filter: %w", name, err)
	}
	if cfg.FanoutGroup != 0 {
		if err := setFanout(tp, cfg.FanoutGroup); err != nil {
			tp.Close()
			return nil, fmt.Errorf("capture: %s: fanout group %d: %w", name, cfg.FanoutGroup, err)
		}
	}
	if cfg.Promiscuous && cfg.Interface != "" {
		if err := tp.SetPromiscuous(true); err != nil {
			tp.Close()
			return nil, fmt.Errorf("capture: %s: promiscuous mode: %w", name, err)
		}
	}
	return l, nil
}

// setFanout joins a PACKET_FANOUT_HASH group with kernel defragmentation
// (fragments of one datagram reach the same member). gopacket's SetFanout
// passes a Go int (8 bytes): kernels before 5.13 reject that length, and
// newer ones read it as struct fanout_args, which is wrong on big-endian
// hosts. So the 4-byte option is set here on the socket, whose descriptor
// gopacket v1.7.7 keeps in its unexported fd field; should that field go,
// gopacket's own call is the fallback.
func setFanout(tp *afpacket.TPacket, group uint16) error {
	arg := int(unix.PACKET_FANOUT_HASH|unix.PACKET_FANOUT_FLAG_DEFRAG)<<16 | int(group)
	if f := reflect.ValueOf(tp).Elem().FieldByName("fd"); f.IsValid() && f.Kind() == reflect.Int {
		return unix.SetsockoptInt(int(f.Int()), unix.SOL_PACKET, unix.PACKET_FANOUT, arg)
	}
	return tp.SetFanout(afpacket.FanoutHash|afpacket.FanoutHashWithDefrag, group)
}

// LinkType is the link type of every packet of this source.
func (l *LiveSource) LinkType() layers.LinkType { return l.linkType }

// ReadPacket waits for the next packet. After Close it returns an error
// wrapping net.ErrClosed; with a ReadTimeout, ErrTimeout when none came.
//
// The frame is copied out of the ring (tens of ns for a 600-byte frame) so
// that Data stays valid until the next ReadPacket even if another goroutine
// calls Close meanwhile.
func (l *LiveSource) ReadPacket(p *Packet) error {
	var start time.Time
	for {
		l.mu.Lock()
		if l.tp == nil || l.closing.Load() {
			l.releaseLocked()
			l.mu.Unlock()
			return fmt.Errorf("capture: %s: %w", l.iface, net.ErrClosed)
		}
		data, ci, err := l.tp.ZeroCopyReadPacketData()
		if err == nil {
			l.buf = append(l.buf[:0], data...)
		}
		l.mu.Unlock() // between polls, Close and Stats get their turn
		if err == afpacket.ErrTimeout {
			if l.timeout > 0 {
				now := time.Now()
				if start.IsZero() {
					start = now
				}
				if now.Sub(start) >= l.timeout {
					return ErrTimeout
				}
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("capture: %s: read: %w", l.iface, err)
		}
		l.frame++
		*p = Packet{Frame: l.frame, Time: ci.Timestamp, CaptureLength: len(l.buf), Length: max(ci.Length, len(l.buf)),
			LinkType: l.linkType, Data: l.buf}
		return nil
	}
}

func (l *LiveSource) releaseLocked() {
	if l.tp == nil {
		return
	}
	l.collectStatsLocked()
	l.tp.Close()
	l.tp = nil
}

// Close stops the capture; a ReadPacket blocked in another goroutine returns
// within 100 ms. It is safe to call more than once.
func (l *LiveSource) Close() error {
	l.closing.Store(true)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.releaseLocked()
	return nil
}

// collectStatsLocked adds the kernel's counters (which reset when read) to
// the totals. The caller holds mu, or knows tp is not being closed.
func (l *LiveSource) collectStatsLocked() error {
	_, v3, err := l.tp.SocketStats()
	if err != nil {
		return err
	}
	l.statsMu.Lock()
	// afpacket accumulates across calls: its totals are ours.
	l.received, l.drops = uint64(v3.Packets()), uint64(v3.Drops())
	l.statsMu.Unlock()
	return nil
}

// Stats returns the kernel's counters since OpenLive (PACKET_STATISTICS):
// frames that passed the filter, including those dropped because the ring
// was full, and those dropped. It may wait up to 100 ms for a reader
// blocked on an empty ring.
func (l *LiveSource) Stats() (received, dropped uint64, err error) {
	l.mu.Lock()
	if l.tp != nil {
		err = l.collectStatsLocked()
	}
	l.mu.Unlock()
	if err != nil {
		return 0, 0, fmt.Errorf("capture: %s: statistics: %w", l.iface, err)
	}
	l.statsMu.Lock()
	defer l.statsMu.Unlock()
	return l.received, l.drops, nil
}

var _ Source = (*LiveSource)(nil)
var _ Source = (*FileSource)(nil)

// String describes the source for logs.
func (l *LiveSource) String() string {
	return "live " + l.iface + " (" + strconv.Itoa(int(l.linkType)) + ")"
}

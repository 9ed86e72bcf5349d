package syslog

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
)

// Defaults of Config.
const (
	DefaultMaxMessage = 64 << 10
	DefaultQueueBytes = 4 << 20
	DefaultMaxConns   = 256
	// maxHosts bounds the table of interned host names.
	maxHosts = 4096
)

// Config configures a Server. The zero value of a field means its default.
type Config struct {
	Listen []Addr
	// MaxMessage is the longest message read; a longer one is counted as
	// malformed and skipped. 0 means DefaultMaxMessage.
	MaxMessage int
	// ReadBuffer sets the datagram sockets' receive buffer (SO_RCVBUF), in
	// bytes; 0 keeps the system's default (net.core.rmem_default).
	ReadBuffer int
	// QueueBytes bounds the messages read but not yet taken by the
	// consumer; when it is full the readers wait, and datagrams the kernel
	// cannot buffer meanwhile are dropped and counted. 0 means
	// DefaultQueueBytes.
	QueueBytes int
	// MaxConns bounds the TCP connections open at once; 0 means
	// DefaultMaxConns.
	MaxConns   int
	Registerer prometheus.Registerer
	Logger     *slog.Logger
}

// Writer is what a Server hands messages to: pipeline.Writer.
type Writer interface {
	// LineFrom takes a message (its MSG part) sent by host; file and line
	// name it in errors (the listener and the message's number on it).
	LineFrom(data []byte, file string, line int64, host string) error
	// Mark flushes the lines written so far.
	Mark(m any) error
}

// Stats are a Server's counters for one network.
type Stats struct {
	Messages  int64 // parsed and handed over
	Malformed int64 // not syslog, or over MaxMessage: skipped
	// Dropped counts the datagrams the kernel dropped because the socket's
	// receive buffer was full (its own count: SO_RXQ_OVFL, and
	// /proc/net/udp's drops column while nothing is read).
	Dropped int64
}

// Server reads syslog messages from its listeners. Create it with New, open
// its sockets with Listen (or let Run do it) and call Run once.
type Server struct {
	cfg       Config
	log       *slog.Logger
	listeners []*listener
	q         queue
	conns     chan struct{} // TCP connection slots
	stats     [numNetworks]struct{ messages, malformed atomic.Int64 }
	lastWarn  atomic.Int64 // unix nanoseconds of the last malformed message logged
	wg        sync.WaitGroup
}

type listener struct {
	addr Addr
	name string // addr.String(): the "file" of its lines
	pc   net.PacketConn
	ln   net.Listener
	// ino is the UDP socket's inode, to find it in /proc/net/udp; ovfl the
	// last SO_RXQ_OVFL count seen (written by its reader only).
	ino   uint64
	ovfl  atomic.Uint32
	index int   // in Server.listeners
	seq   int64 // messages numbered on this listener (under the queue's lock)
}

// New validates cfg. It opens nothing.
func New(cfg Config) (*Server, error) {
	if len(cfg.Listen) == 0 {
		return nil, errors.New("syslog: nothing to listen on")
	}
	seen := map[Addr]bool{}
	for _, a := range cfg.Listen {
		if a.Network >= numNetworks || a.Address == "" {
			return nil, fmt.Errorf("syslog: listen %v: want %s", a, AcceptedForms)
		}
		if seen[a] {
			return nil, fmt.Errorf("syslog: listen %v given twice", a)
		}
		seen[a] = true
	}
	if cfg.MaxMessage <= 0 {
		cfg.MaxMessage = DefaultMaxMessage
	}
	if cfg.QueueBytes <= 0 {
		cfg.QueueBytes = DefaultQueueBytes
	}
	cfg.QueueBytes = max(cfg.QueueBytes, cfg.MaxMessage+256)
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.ReadBuffer < 0 {
		return nil, fmt.Errorf("syslog: read buffer %d is negative", cfg.ReadBuffer)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, conns: make(chan struct{}, cfg.MaxConns)}
	s.q.init(cfg.QueueBytes)
	for i, a := range cfg.Listen {
		s.listeners = append(s.listeners, &listener{addr: a, name: a.String(), index: i})
	}
	if cfg.Registerer != nil {
		if err := s.register(cfg.Registerer); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *Server) register(reg prometheus.Registerer) error {
	for n := range numNetworks {
		labels := prometheus.Labels{"network": n.String()}
		cs := []prometheus.Collector{
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "guardd_syslog_messages_total", ConstLabels: labels,
				Help: "Syslog messages received and handed to the rules, by listener network."},
				func() float64 { return float64(s.stats[n].messages.Load()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "guardd_syslog_malformed_total", ConstLabels: labels,
				Help: "Syslog messages that were not syslog (or too long) and were skipped, by listener network."},
				func() float64 { return float64(s.stats[n].malformed.Load()) }),
		}
		if n == UDP {
			cs = append(cs, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "guardd_syslog_dropped_datagrams_total", ConstLabels: labels,
				Help: "Datagrams the kernel dropped because a syslog socket's receive buffer was full (its own count)."},
				func() float64 { return float64(s.Stats(n).Dropped) }))
		}
		for _, c := range cs {
			if err := reg.Register(c); err != nil {
				return fmt.Errorf("syslog: metrics: %w", err)
			}
		}
	}
	return nil
}

// Stats returns the counters of one network; safe at any time.
func (s *Server) Stats(n Network) Stats {
	if n >= numNetworks {
		return Stats{}
	}
	st := Stats{Messages: s.stats[n].messages.Load(), Malformed: s.stats[n].malformed.Load()}
	for _, l := range s.listeners {
		if l.addr.Network != n || n != UDP {
			continue
		}
		d := int64(l.ovfl.Load())
		if p, ok := procDrops(l.ino); ok && p > d {
			d = p
		}
		st.Dropped += d
	}
	return st
}

// Listen opens every listener's socket, so that their addresses are known
// (a port of 0 picks one) before Run. A Unix socket's path is replaced if
// a socket is there already (a guardd that did not stop cleanly), and
// made writable by everyone: restrict who may send through its directory.
func (s *Server) Listen() error {
	for _, l := range s.listeners {
		if l.pc != nil || l.ln != nil {
			continue
		}
		if err := s.open(l); err != nil {
			s.closeAll()
			return err
		}
	}
	return nil
}

func (s *Server) open(l *listener) error {
	var err error
	switch l.addr.Network {
	case Unixgram:
		if st, serr := os.Lstat(l.addr.Address); serr == nil && st.Mode().Type() == os.ModeSocket {
			os.Remove(l.addr.Address)
		}
		var c *net.UnixConn
		if c, err = net.ListenUnixgram("unixgram", &net.UnixAddr{Name: l.addr.Address, Net: "unixgram"}); err == nil {
			l.pc = c
			if err = os.Chmod(l.addr.Address, 0o666); err == nil && s.cfg.ReadBuffer > 0 {
				err = c.SetReadBuffer(s.cfg.ReadBuffer)
			}
		}
	case UDP:
		var c *net.UDPConn
		if c, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(l.addr.Address))); err == nil {
			l.pc = c
			if s.cfg.ReadBuffer > 0 {
				err = c.SetReadBuffer(s.cfg.ReadBuffer)
			}
			if err == nil {
				l.ino, err = rxqOverflow(c)
			}
		}
	case TCP:
		l.ln, err = net.Listen("tcp", l.addr.Address)
	}
	if err != nil {
		if l.pc != nil {
			l.pc.Close()
			l.pc = nil
		}
		return fmt.Errorf("syslog: listen %s: %w", l.name, err)
	}
	return nil
}

// rxqOverflow turns on SO_RXQ_OVFL, so that each datagram read carries the
// socket's count of drops, and returns the socket's inode.
func rxqOverflow(c *net.UDPConn) (uint64, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var ino uint64
	var serr error
	if err := rc.Control(func(fd uintptr) {
		if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 1); serr != nil {
			return
		}
		var st unix.Stat_t
		if serr = unix.Fstat(int(fd), &st); serr == nil {
			ino = st.Ino
		}
	}); err != nil {
		return 0, err
	}
	return ino, serr
}

// Addrs returns the listeners' addresses, once Listen has opened them.
func (s *Server) Addrs() []net.Addr {
	var out []net.Addr
	for _, l := range s.listeners {
		switch {
		case l.pc != nil:
			out = append(out, l.pc.LocalAddr())
		case l.ln != nil:
			out = append(out, l.ln.Addr())
		}
	}
	return out
}

func (s *Server) closeAll() {
	for _, l := range s.listeners {
		if l.pc != nil && l.pc.Close() == nil && l.addr.Network == Unixgram {
			os.Remove(l.addr.Address)
		}
		if l.ln != nil {
			l.ln.Close()
		}
	}
}

// Run reads every listener until ctx ends, handing the messages to w on
// Run's goroutine in the order they were read: each batch of what arrived
// while w was busy is followed by w.Mark(nil). It returns nil when ctx
// ends, after closing the sockets (a Unix socket's path is removed) and
// waiting for its goroutines; an error from w ends it too.
func (s *Server) Run(ctx context.Context, w Writer) error {
	if err := s.Listen(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, l := range s.listeners {
		s.wg.Add(1)
		switch {
		case l.ln != nil:
			go s.accept(ctx, l)
		default:
			go s.readDatagrams(l)
		}
	}
	s.log.Info("syslog: listening", "listen", s.names())
	go func() {
		<-ctx.Done()
		s.closeAll()
		s.q.close()
	}()
	err := s.consume(ctx, w)
	cancel()
	s.wg.Wait()
	return err
}

func (s *Server) names() []string {
	out := make([]string, len(s.listeners))
	for i, l := range s.listeners {
		out[i] = l.name
	}
	return out
}

// consume hands what the readers queued to w until the queue is closed.
func (s *Server) consume(ctx context.Context, w Writer) error {
	hosts := map[string]string{}
	var spare queued
	for {
		batch, ok := s.q.take(&spare)
		if !ok {
			return nil
		}
		for i := range batch.recs {
			r := &batch.recs[i]
			h := batch.data[r.host : r.host+r.hostN]
			host, ok := hosts[string(h)]
			if !ok {
				host = string(h)
				if len(hosts) < maxHosts {
					hosts[host] = host
				}
			}
			l := s.listeners[r.listener]
			if err := w.LineFrom(batch.data[r.off:r.off+r.n], l.name, r.line, host); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
		if err := w.Mark(nil); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		spare = batch
	}
}

// put parses one message of l from peer and queues it; a malformed one is
// counted and skipped.
func (s *Server) put(l *listener, b []byte, peer netip.Addr, m *Message) {
	n := l.addr.Network
	if len(b) > s.cfg.MaxMessage {
		s.malformed(l, b, ErrFrameTooLong)
		return
	}
	if err := Parse(b, m); err != nil {
		s.malformed(l, b, err)
		return
	}
	if !s.q.put(l, m.Msg, m.Host, peer) {
		return // closed
	}
	s.stats[n].messages.Add(1)
}

func (s *Server) malformed(l *listener, b []byte, err error) {
	s.stats[l.addr.Network].malformed.Add(1)
	now := time.Now().UnixNano()
	if last := s.lastWarn.Load(); now-last > int64(10*time.Second) && s.lastWarn.CompareAndSwap(last, now) {
		s.log.Warn("syslog: malformed message skipped (logged at most every 10s)", "listen", l.name, "err", err,
			"start", string(b[:min(len(b), 80)]))
	}
}

// readDatagrams reads a datagram socket until it is closed.
func (s *Server) readDatagrams(l *listener) {
	defer s.wg.Done()
	buf := make([]byte, s.cfg.MaxMessage+1)
	oob := make([]byte, unix.CmsgSpace(4))
	var m Message
	udp, _ := l.pc.(*net.UDPConn)
	unixc, _ := l.pc.(*net.UnixConn)
	for {
		var (
			n, oobn int
			peer    netip.Addr
			err     error
		)
		if udp != nil {
			var ap netip.AddrPort
			n, oobn, _, ap, err = udp.ReadMsgUDPAddrPort(buf, oob)
			peer = ap.Addr().Unmap()
			if oobn > 0 {
				if d, ok := parseOverflow(oob[:oobn]); ok {
					l.ovfl.Store(d)
				}
			}
		} else {
			n, _, _, _, err = unixc.ReadMsgUnix(buf, nil)
		}
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Warn("syslog: read", "listen", l.name, "err", err)
			continue
		}
		s.put(l, buf[:n], peer, &m)
	}
}

// parseOverflow reads the SO_RXQ_OVFL count from a control message.
func parseOverflow(oob []byte) (uint32, bool) {
	const hdr = unix.SizeofCmsghdr
	for len(oob) >= hdr {
		h := (*unix.Cmsghdr)(unsafePointer(oob))
		clen := int(h.Len)
		if clen < hdr || clen > len(oob) {
			return 0, false
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SO_RXQ_OVFL && clen >= hdr+4 {
			return binary.NativeEndian.Uint32(oob[hdr:]), true
		}
		next := unix.CmsgSpace(clen - hdr)
		if next > len(oob) {
			return 0, false
		}
		oob = oob[next:]
	}
	return 0, false
}

// accept serves a TCP listener until it is closed.
func (s *Server) accept(ctx context.Context, l *listener) {
	defer s.wg.Done()
	var conns sync.WaitGroup
	defer conns.Wait()
	var mu sync.Mutex
	open := map[net.Conn]struct{}{}
	go func() {
		<-ctx.Done()
		mu.Lock()
		for c := range open {
			c.Close()
		}
		mu.Unlock()
	}()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Warn("syslog: accept", "listen", l.name, "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		select {
		case s.conns <- struct{}{}:
		default:
			s.log.Warn("syslog: too many connections; closing a new one", "listen", l.name, "max", s.cfg.MaxConns)
			c.Close()
			continue
		}
		mu.Lock()
		if ctx.Err() != nil {
			mu.Unlock()
			c.Close()
			<-s.conns
			return
		}
		open[c] = struct{}{}
		mu.Unlock()
		conns.Add(1)
		go func() {
			defer conns.Done()
			s.readStream(l, c)
			mu.Lock()
			delete(open, c)
			mu.Unlock()
			c.Close()
			<-s.conns
		}()
	}
}

// readStream reads the frames of one TCP connection until it ends.
func (s *Server) readStream(l *listener, c net.Conn) {
	var peer netip.Addr
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		peer = ta.AddrPort().Addr().Unmap()
	}
	f := NewFramer(c, s.cfg.MaxMessage)
	var m Message
	for {
		b, err := f.Next()
		switch {
		case err == nil:
			s.put(l, b, peer, &m)
		case errors.Is(err, ErrFrameTooLong):
			s.malformed(l, nil, err)
		case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
			return
		default:
			if errors.Is(err, ErrFraming) {
				s.malformed(l, nil, err)
			}
			s.log.Debug("syslog: connection ended", "listen", l.name, "err", err)
			return
		}
	}
}

//go:build linux

package http1

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Serve answers connections accepted from ln until ctx ends, then closes
// them and returns nil. ln must be a TCP or Unix stream listener; it stays
// open (the caller closes it).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	sc, ok := ln.(syscall.Conn)
	if !ok {
		return fmt.Errorf("http1: %T is not a socket listener", ln)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return fmt.Errorf("http1: %w", err)
	}
	lfd := -1
	if err := raw.Control(func(fd uintptr) { lfd = int(fd) }); err != nil {
		return fmt.Errorf("http1: %w", err)
	}
	loops := make([]*loop, 0, s.cfg.Loops)
	defer func() {
		for _, l := range loops {
			l.close()
		}
	}()
	// With a P to spare for everything else, and the preemption signals
	// that interrupt a raw wait, loops wait in raw system calls: see run.
	rawWait := runtime.GOMAXPROCS(0) > s.cfg.Loops && !strings.Contains(os.Getenv("GODEBUG"), "asyncpreemptoff=1")
	for range s.cfg.Loops {
		l, err := newLoop(s, lfd)
		if err != nil {
			return err
		}
		l.rawWait = rawWait
		loops = append(loops, l)
	}
	// The first loop to end (an error, or ctx) ends them all.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var quit atomic.Bool
	woken := make(chan struct{})
	go func() {
		defer close(woken)
		<-ctx.Done()
		quit.Store(true)
		for _, l := range loops {
			l.wake()
		}
	}()
	var wg sync.WaitGroup
	errs := make([]error, len(loops))
	for i, l := range loops {
		wg.Go(func() {
			errs[i] = l.run(&quit)
			cancel()
		})
	}
	wg.Wait()
	<-woken               // before the deferred close of the eventfds
	runtime.KeepAlive(ln) // lfd is ln's: keep ln from being finalised
	return errors.Join(errs...)
}

// loop is one event loop: an epoll set with the listener, a wake-up
// eventfd and its connections.
type loop struct {
	session
	ep, efd, lfd int
	conns        []*conn // by fd
	events       [256]unix.EpollEvent
	rbuf         []byte
	acceptPaused time.Time // zero when accepting
	lastSweep    time.Time
	// rawWait blocks in epoll_wait without telling the scheduler (see run).
	rawWait bool
}

func newLoop(s *Server, lfd int) (*loop, error) {
	l := &loop{session: session{s: s}, lfd: lfd, efd: -1, rbuf: make([]byte, 64<<10)}
	var err error
	if l.ep, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return nil, fmt.Errorf("http1: epoll_create: %w", err)
	}
	if l.efd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		l.close()
		return nil, fmt.Errorf("http1: eventfd: %w", err)
	}
	if err := l.ctl(unix.EPOLL_CTL_ADD, l.efd, unix.EPOLLIN); err != nil {
		l.close()
		return nil, err
	}
	if err := l.listen(true); err != nil {
		l.close()
		return nil, err
	}
	return l, nil
}

// listen adds or removes the listener. EPOLLEXCLUSIVE wakes one loop per
// new connection, not all of them.
func (l *loop) listen(on bool) error {
	if on {
		return l.ctl(unix.EPOLL_CTL_ADD, l.lfd, unix.EPOLLIN|unix.EPOLLEXCLUSIVE)
	}
	return l.ctl(unix.EPOLL_CTL_DEL, l.lfd, 0)
}

func (l *loop) ctl(op, fd int, events uint32) error {
	ev := unix.EpollEvent{Events: events, Fd: int32(fd)}
	if err := unix.EpollCtl(l.ep, op, fd, &ev); err != nil {
		return fmt.Errorf("http1: epoll_ctl fd %d: %w", fd, err)
	}
	return nil
}

func (l *loop) wake() {
	var one = [8]byte{1}
	unix.Write(l.efd, one[:])
}

func (l *loop) close() {
	for _, c := range l.conns {
		if c != nil {
			l.closeConn(c)
		}
	}
	if l.efd >= 0 {
		unix.Close(l.efd)
		l.efd = -1
	}
	if l.ep >= 0 {
		unix.Close(l.ep)
		l.ep = -1
	}
}

func (l *loop) run(quit *atomic.Bool) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	l.tick(time.Now())
	l.lastSweep = l.now
	for {
		// Ask without blocking first: under load there is nearly always
		// something ready, and a raw call skips the scheduler's syscall
		// bookkeeping. Block (letting the runtime reuse this P) only when
		// idle.
		n, err := epollWait(l.ep, l.events[:], 0)
		if err == nil && n == 0 {
			timeout := 1000
			if !l.acceptPaused.IsZero() {
				timeout = 100
			}
			if l.rawWait {
				// A blocking system call made through the scheduler hands
				// this thread's P away and takes one back on return; under
				// load that happens between most batches, and the hand-offs
				// (other threads woken to look for work) cost a third of
				// the tail latency (p99 0.86 ms against 0.55 ms with wrk
				// and nginx's own requests). Waiting in a raw call keeps
				// the P; the rest of guardd runs on the others (rawWait is
				// set only when GOMAXPROCS exceeds the loops). The
				// scheduler still reaches this goroutine: its preemption
				// signal, sent for a garbage collection or after 10 ms,
				// interrupts epoll_wait (EINTR, never restarted), and the
				// loop yields (so not with GODEBUG=asyncpreemptoff=1,
				// which sends no signal).
				n, err = epollWait(l.ep, l.events[:], timeout)
			} else {
				n, err = unix.EpollWait(l.ep, l.events[:], timeout)
			}
		}
		if err == unix.EINTR {
			// Most often the scheduler's preemption signal (a collection
			// is stopping the world, or this goroutine has run for 10 ms):
			// yield now, not at some later function call.
			runtime.Gosched()
			n, err = 0, nil
		}
		if err != nil {
			return fmt.Errorf("http1: epoll_wait: %w", err)
		}
		l.tick(time.Now())
		for i := range n {
			ev := &l.events[i]
			switch fd := int(ev.Fd); fd {
			case l.efd:
				if quit.Load() {
					return nil
				}
			case l.lfd:
				l.accept()
			default:
				if fd < len(l.conns) && l.conns[fd] != nil {
					l.handle(l.conns[fd], ev.Events)
				}
			}
		}
		if l.now.Sub(l.lastSweep) >= time.Second || (!l.acceptPaused.IsZero() && l.now.After(l.acceptPaused)) {
			l.sweep()
		}
	}
}

func (l *loop) accept() {
	for {
		fd, _, err := unix.Accept4(l.lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		switch {
		case err == unix.EAGAIN || err == unix.EINTR:
			return
		case err == unix.ECONNABORTED:
			continue
		case err == unix.EMFILE || err == unix.ENFILE || err == unix.ENOBUFS || err == unix.ENOMEM:
			// The listener stays readable: stop asking for 100 ms rather
			// than spin.
			l.s.cfg.Logger.Warn("http1: accept: out of descriptors or memory, pausing 100ms", "err", err)
			if l.listen(false) == nil {
				l.acceptPaused = l.now.Add(100 * time.Millisecond)
			}
			return
		case err != nil:
			l.s.cfg.Logger.Warn("http1: accept", "err", err)
			return
		}
		if l.s.stats.conns.Load() >= int64(l.s.cfg.MaxConns) {
			l.s.stats.rejected.Add(1)
			unix.Close(fd)
			continue
		}
		unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1) // fails harmlessly on Unix sockets
		if err := l.ctl(unix.EPOLL_CTL_ADD, fd, unix.EPOLLIN|unix.EPOLLRDHUP); err != nil {
			unix.Close(fd)
			continue
		}
		for fd >= len(l.conns) {
			l.conns = append(l.conns, nil)
		}
		l.conns[fd] = &conn{fd: fd, last: l.now.UnixNano()}
		l.s.stats.accepted.Add(1)
		l.s.stats.conns.Add(1)
	}
}

// handle serves one readiness event of c.
func (l *loop) handle(c *conn, events uint32) {
	if c.writing {
		if !l.flush(c) {
			return
		}
		if c.writing {
			if events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				l.closeConn(c) // gone, or done sending and not reading answers
			}
			return
		}
		// Drained: answer what was read meanwhile.
		if len(c.in) > 0 {
			l.process(c, c.in)
			if !l.flush(c) {
				return
			}
		}
		if !c.writing {
			l.ctl(unix.EPOLL_CTL_MOD, c.fd, unix.EPOLLIN|unix.EPOLLRDHUP)
		}
		return
	}
	n, err := rawRecv(c.fd, l.rbuf)
	switch {
	case err == unix.EAGAIN || err == unix.EINTR:
		return
	case err != nil || n == 0: // error, or the peer is done
		l.closeConn(c)
		return
	}
	c.last = l.now.UnixNano()
	data := l.rbuf[:n]
	if len(c.in) > 0 {
		c.in = append(c.in, data...)
		data = c.in
	}
	l.process(c, data)
	if cap(c.in) > 64<<10 && len(c.in) == 0 {
		c.in = nil
	}
	l.flush(c)
}

// flush writes c.out. It returns false when c was closed.
func (l *loop) flush(c *conn) bool {
	for len(c.out) > 0 {
		n, err := rawSend(c.fd, c.out[c.sent:])
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			break
		}
		if err != nil {
			l.closeConn(c)
			return false
		}
		c.last = l.now.UnixNano()
		c.sent += n
		if c.sent == len(c.out) {
			c.out, c.sent = c.out[:0], 0
		}
	}
	if len(c.out) > 0 {
		if !c.writing {
			c.writing = true
			l.ctl(unix.EPOLL_CTL_MOD, c.fd, unix.EPOLLOUT|unix.EPOLLRDHUP)
		}
		return true
	}
	c.writing = false
	if cap(c.out) > 64<<10 {
		c.out = nil
	}
	if c.closing {
		l.closeConn(c)
		return false
	}
	return true
}

func (l *loop) closeConn(c *conn) {
	if c.fd < len(l.conns) && l.conns[c.fd] == c {
		l.conns[c.fd] = nil
	}
	// Counted out before the close: a peer that sees the close must not
	// then see the connection still counted.
	l.s.stats.conns.Add(-1)
	unix.Close(c.fd) // also leaves the epoll set
}

// sweep closes connections past their timeouts and resumes accepting.
func (l *loop) sweep() {
	l.lastSweep = l.now
	if !l.acceptPaused.IsZero() && l.now.After(l.acceptPaused) {
		if l.listen(true) == nil {
			l.acceptPaused = time.Time{}
		}
	}
	now := l.now.UnixNano()
	for _, c := range l.conns {
		if c != nil && l.expired(c, now) {
			l.s.stats.timeouts.Add(1)
			l.closeConn(c)
		}
	}
}

// The raw calls below skip the runtime's system call bookkeeping. recv and
// send never block (the descriptors are non-blocking); epoll_wait blocks
// only when run asks it to (see there).

func epollWait(ep int, evs []unix.EpollEvent, timeoutMs int) (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(ep), uintptr(unsafe.Pointer(&evs[0])), uintptr(len(evs)), uintptr(timeoutMs), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

func rawRecv(fd int, b []byte) (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// rawSend sends with MSG_NOSIGNAL: a peer gone is an error, not SIGPIPE.
func rawSend(fd int, b []byte) (int, error) {
	r, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), unix.MSG_NOSIGNAL, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

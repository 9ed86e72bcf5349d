package syslog

import (
	"net/netip"
	"sync"
	"unsafe"
)

// rec is one queued message: its MSG and its host in queued.data.
type rec struct {
	off, n, host, hostN int
	listener            int
	line                int64
}

// queued is what the readers queued: messages back to back in data.
type queued struct {
	data []byte
	recs []rec
}

// queue carries messages from the readers (many goroutines) to the
// consumer (one): a reader appends under the lock, the consumer swaps the
// whole buffer for an empty one. While the consumer is busy, messages
// gather into one batch; when it waits, each message wakes it at once. Its
// size is bounded: a reader waits for room, and the kernel buffers (and,
// for datagrams, drops and counts) what arrives meanwhile.
type queue struct {
	mu     sync.Mutex
	space  *sync.Cond
	cur    queued
	max    int
	ready  chan struct{} // a message may be waiting
	closed bool
}

func (q *queue) init(max int) {
	q.max = max
	q.space = sync.NewCond(&q.mu)
	q.ready = make(chan struct{}, 1)
}

// put queues msg from l, sent by host (or, without a host, by peer). It
// returns false once the queue is closed.
func (q *queue) put(l *listener, msg, host []byte, peer netip.Addr) bool {
	need := len(msg) + len(host) + 48
	q.mu.Lock()
	for !q.closed && len(q.cur.data) > 0 && len(q.cur.data)+need > q.max {
		q.space.Wait()
	}
	if q.closed {
		q.mu.Unlock()
		return false
	}
	off := len(q.cur.data)
	q.cur.data = append(q.cur.data, msg...)
	h := len(q.cur.data)
	if len(host) > 0 {
		q.cur.data = append(q.cur.data, host...)
	} else if peer.IsValid() {
		q.cur.data = peer.AppendTo(q.cur.data)
	}
	l.seq++
	q.cur.recs = append(q.cur.recs, rec{off: off, n: len(msg), host: h, hostN: len(q.cur.data) - h, listener: l.index, line: l.seq})
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return true
}

// take returns what is queued, waiting for something, and hands spare's
// buffers to the readers. It returns false once the queue is closed and
// empty.
func (q *queue) take(spare *queued) (queued, bool) {
	for {
		q.mu.Lock()
		if len(q.cur.recs) > 0 {
			b := q.cur
			q.cur = queued{data: spare.data[:0], recs: spare.recs[:0]}
			q.space.Broadcast()
			q.mu.Unlock()
			return b, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return queued{}, false
		}
		<-q.ready
	}
}

// close wakes the readers waiting for room and the consumer.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.space.Broadcast()
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

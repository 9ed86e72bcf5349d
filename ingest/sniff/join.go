package sniff

import (
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/guardd/guardd/characteristics"
)

// maxPendingRequests caps the HTTP records kept per connection for Enrich.
const maxPendingRequests = 32

// Join matches fingerprint records to log events of the same connection, by
// client address and port (nginx logs $remote_port). It keeps each
// connection's TLS/QUIC fingerprint and its HTTP requests in order (keep-alive)
// for ttl of packet time, and at most max connections, forgetting the least
// recently updated first. It is safe for concurrent use.
type Join struct {
	ttl time.Duration
	max int

	mu         sync.Mutex
	m          map[joinKey]*joinEntry
	head, tail *joinEntry // recency list, head = most recently updated
}

type joinKey struct {
	ip   netip.Addr
	port uint16
}

type joinEntry struct {
	key        joinKey
	updated    time.Time
	prev, next *joinEntry

	hasTLS                    bool
	tlsTime                   time.Time
	sni, alpn, ja3, ja3n, ja4 string

	reqs []joinRequest
}

type joinRequest struct {
	time         time.Time
	method, path string
	ja4h         string
}

// NewJoin returns a Join keeping entries for ttl (default 1 minute when ≤ 0)
// and at most max connections (default 1<<16 when ≤ 0).
func NewJoin(ttl time.Duration, max int) *Join {
	if ttl <= 0 {
		ttl = time.Minute
	}
	if max <= 0 {
		max = 1 << 16
	}
	return &Join{ttl: ttl, max: max, m: make(map[joinKey]*joinEntry)}
}

// Put records r. Records arrive in packet-time order; entries older than ttl
// before r.Time are dropped.
func (j *Join) Put(r *Record) {
	k := joinKey{r.Src.Unmap(), r.SrcPort}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.expireLocked(r.Time.Add(-j.ttl))
	e := j.m[k]
	if e == nil {
		if len(j.m) >= j.max {
			j.removeLocked(j.tail)
		}
		e = &joinEntry{key: k}
		j.m[k] = e
	} else {
		j.unlinkLocked(e)
	}
	e.updated = r.Time
	j.pushFrontLocked(e)
	switch r.Proto {
	case ProtoTLS, ProtoQUIC:
		// The first hello of a connection names it (the one after a
		// HelloRetryRequest is the same client); a hello older than ttl
		// belonged to an earlier connection on the same port.
		if !e.hasTLS || r.Time.Sub(e.tlsTime) > j.ttl {
			e.hasTLS, e.tlsTime = true, r.Time
			e.sni, e.alpn, e.ja3, e.ja3n, e.ja4 = r.SNI, r.ALPN, r.JA3Hash, r.JA3NHash, r.JA4
		}
	case ProtoHTTP:
		if len(e.reqs) == maxPendingRequests {
			copy(e.reqs, e.reqs[1:])
			e.reqs = e.reqs[:len(e.reqs)-1]
		}
		e.reqs = append(e.reqs, joinRequest{time: r.Time, method: r.Method, path: r.Path, ja4h: r.JA4H})
	}
}

// Enrich sets ev.TLS.{SNI,ALPN,JA3,JA3N,JA4} (JA3 and JA3N as their MD5 hashes)
// from the TLS or QUIC fingerprint of ev's connection (ev.IP, ev.Port), and
// ev.JA4H from the oldest unmatched HTTP request of that connection with ev's
// method and path, when they were seen within ttl of ev.Time. A matched request
// is consumed with the requests before it. It reports whether it set anything.
func (j *Join) Enrich(ev *characteristics.Event) bool {
	if ev.Port == 0 || !ev.IP.IsValid() {
		return false
	}
	k := joinKey{ev.IP.Unmap(), ev.Port}
	j.mu.Lock()
	defer j.mu.Unlock()
	e := j.m[k]
	if e == nil {
		return false
	}
	set := false
	if e.hasTLS && within(ev.Time, e.tlsTime, j.ttl) {
		ev.TLS.SNI, ev.TLS.ALPN, ev.TLS.JA3, ev.TLS.JA3N, ev.TLS.JA4 = e.sni, e.alpn, e.ja3, e.ja3n, e.ja4
		set = true
	}
	for i := range e.reqs {
		q := &e.reqs[i]
		if q.method == ev.Method && pathMatches(q.path, ev.Path, ev.Query) && within(ev.Time, q.time, j.ttl) {
			if q.ja4h != "" {
				ev.JA4H = q.ja4h
				set = true
			}
			n := copy(e.reqs, e.reqs[i+1:])
			clear(e.reqs[n:])
			e.reqs = e.reqs[:n]
			break
		}
	}
	return set
}

// Len returns the number of connections held.
func (j *Join) Len() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.m)
}

// within reports whether a log line at t can belong to a message seen at seen:
// nginx logs a request when it ends, after its packets.
func within(t, seen time.Time, ttl time.Duration) bool {
	d := t.Sub(seen)
	return d <= ttl && d >= -ttl
}

// pathMatches compares a request-target with a log event's path and query
// (without '?').
func pathMatches(target, path, query string) bool {
	if query == "" {
		return target == path || (strings.HasPrefix(target, path) && target[len(path):] == "?")
	}
	return len(target) == len(path)+1+len(query) && strings.HasPrefix(target, path) &&
		target[len(path)] == '?' && target[len(path)+1:] == query
}

func (j *Join) expireLocked(before time.Time) {
	for j.tail != nil && j.tail.updated.Before(before) {
		j.removeLocked(j.tail)
	}
}

func (j *Join) removeLocked(e *joinEntry) {
	if e == nil {
		return
	}
	j.unlinkLocked(e)
	delete(j.m, e.key)
}

func (j *Join) pushFrontLocked(e *joinEntry) {
	e.prev, e.next = nil, j.head
	if j.head != nil {
		j.head.prev = e
	}
	j.head = e
	if j.tail == nil {
		j.tail = e
	}
}

func (j *Join) unlinkLocked(e *joinEntry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else if j.head == e {
		j.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else if j.tail == e {
		j.tail = e.prev
	}
	e.prev, e.next = nil, nil
}

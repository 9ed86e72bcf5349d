package counting

import (
	"errors"
	"sync"
	"time"
)

// Seen remembers keys for a while: the hashes of request IDs a request was
// counted under when it arrived (at the decision API), so that its access
// log line, read a moment later, is not counted again. It is bounded: past
// Max keys the oldest are forgotten first, and a key older than TTL is
// forgotten too. It is safe for concurrent use.
type Seen struct {
	mu   sync.Mutex
	ttl  int64
	keys map[uint64]int64 // key -> when added, unix nanoseconds
	ring []seenEntry      // keys in the order added, for forgetting
	head int              // oldest entry
	n    int              // entries in ring
}

type seenEntry struct {
	key uint64
	at  int64
}

// NewSeen makes a Seen of at most max keys kept at most ttl.
func NewSeen(max int, ttl time.Duration) (*Seen, error) {
	if max <= 0 || ttl <= 0 {
		return nil, errors.New("counting: Seen needs a positive size and time to live")
	}
	return &Seen{ttl: int64(ttl), keys: make(map[uint64]int64), ring: make([]seenEntry, max)}, nil
}

// Add remembers key as of now (unix nanoseconds).
func (s *Seen) Add(key uint64, now int64) {
	s.mu.Lock()
	s.forgetLocked(now)
	if s.n == len(s.ring) {
		s.dropOldestLocked()
	}
	s.ring[(s.head+s.n)%len(s.ring)] = seenEntry{key, now}
	s.n++
	s.keys[key] = now
	s.mu.Unlock()
}

// Take reports whether key was added and not yet forgotten, and forgets it:
// a request's log line is read once.
func (s *Seen) Take(key uint64, now int64) bool {
	s.mu.Lock()
	at, ok := s.keys[key]
	if ok {
		delete(s.keys, key)
		ok = now-at <= s.ttl
	}
	s.mu.Unlock()
	return ok
}

// Len is the number of keys remembered.
func (s *Seen) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys)
}

// forgetLocked drops the entries older than the time to live.
func (s *Seen) forgetLocked(now int64) {
	for s.n > 0 && now-s.ring[s.head].at > s.ttl {
		s.dropOldestLocked()
	}
}

func (s *Seen) dropOldestLocked() {
	e := s.ring[s.head]
	if at, ok := s.keys[e.key]; ok && at == e.at { // not taken, not added again since
		delete(s.keys, e.key)
	}
	s.head = (s.head + 1) % len(s.ring)
	s.n--
}

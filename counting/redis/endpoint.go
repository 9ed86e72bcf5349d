package redis

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/guardd/guardd/counting"
)

// Slots is the number of Redis Cluster hash slots.
const Slots = 16384

// Router is implemented by a Store whose keys live on several endpoints
// (a Cluster's masters). The fleet keeps one circuit breaker per endpoint,
// so one master down degrades only the keys whose slots it serves. A Store
// that is not a Router is one endpoint.
type Router interface {
	// Topology returns the endpoints' names (bounded: the deployment's
	// masters, never a client's address) and, for each of the Slots hash
	// slots, the index in names of the endpoint serving it; nil slots
	// means every slot is on names[0].
	Topology(ctx context.Context) (names []string, slots []uint16, err error)
	// Ping checks that endpoint name answers: the half-open probe of an
	// endpoint with nothing to flush.
	Ping(ctx context.Context, name string) error
}

// Topology refresh: every topologyEvery, and every Cooldown while a
// breaker is not closed (a failover moves slots to another master).
const topologyEvery = 10 * time.Second

// endpoint is one Redis master and its breaker.
type endpoint struct {
	name   string
	br     *Breaker
	closed atomic.Bool
	slots  atomic.Int64 // hash slots it serves
}

// topology maps slots to endpoints. It is replaced, never changed.
type topology struct {
	eps   []*endpoint
	slots []uint16 // nil: every slot on eps[0]
}

func (t *topology) of(slot uint16) int {
	if t.slots == nil {
		return 0
	}
	return int(t.slots[slot])
}

// endpoints holds the fleet's current topology and keeps Fleet.healthy
// (every endpoint closed) in step with the breakers.
type endpoints struct {
	f   *Fleet
	top atomic.Pointer[topology]

	mu sync.Mutex // serialises health recomputation and topology swaps

	refreshing atomic.Bool
	lastTry    atomic.Int64 // unix ns of the last refresh started
	known      atomic.Bool  // a topology has been read from the Store
}

func (e *endpoints) init(f *Fleet, name string) {
	e.f = f
	ep := e.newEndpoint(name)
	ep.slots.Store(Slots)
	e.top.Store(&topology{eps: []*endpoint{ep}})
	f.met.setEndpoint(name, BreakerClosed)
}

func (e *endpoints) newEndpoint(name string) *endpoint {
	ep := &endpoint{name: name}
	ep.closed.Store(true)
	ep.br = NewBreaker(e.f.cfg.Threshold, e.f.cfg.Cooldown, func(s BreakerState) {
		ep.closed.Store(s == BreakerClosed)
		e.f.met.setEndpoint(ep.name, s)
		e.f.log.Info("fleet: redis circuit breaker", "endpoint", ep.name, "state", s.String())
		e.recompute()
	})
	return ep
}

// recompute sets Fleet.healthy and the deployment-wide breaker gauge from
// the endpoints' states. Under e.mu, so that the last of two concurrent
// transitions sees both.
func (e *endpoints) recompute() {
	e.mu.Lock()
	defer e.mu.Unlock()
	worst := BreakerClosed
	for _, ep := range e.top.Load().eps {
		if s := ep.br.peek(); s > worst {
			worst = s
		}
	}
	e.f.healthy.Store(worst == BreakerClosed)
	e.f.met.setWorst(worst)
}

// healthyKey reports whether key of counter c is on an endpoint whose
// breaker is closed. Called only when some breaker is not: the healthy
// path of Add costs nothing more.
func (e *endpoints) healthyKey(c *Counter, key uint64) bool {
	t := e.top.Load()
	if t.slots == nil {
		return t.eps[0].closed.Load()
	}
	if key == 0 {
		key = counting.ZeroKey // as Add stores it, and as redisKey names it
	}
	var buf [96]byte
	b := append(buf[:0], c.prefix...)
	b = strconv.AppendUint(b, key, 16)
	b = append(b, '}')
	return t.eps[t.of(KeySlot(b))].closed.Load()
}

// due reports whether the topology should be read again at now.
func (e *endpoints) due(now time.Time) bool {
	if _, ok := e.f.store.(Router); !ok {
		return false
	}
	every := topologyEvery
	if !e.known.Load() || !e.f.healthy.Load() {
		every = e.f.cfg.Cooldown
	}
	return now.UnixNano()-e.lastTry.Load() >= every.Nanoseconds()
}

// refresh reads the topology in the background, off the flush loop (a
// dead master must not delay the others' flushes), and swaps it in.
// Endpoints that keep their name keep their breaker.
func (e *endpoints) refresh(now time.Time) {
	r, ok := e.f.store.(Router)
	if !ok || !e.refreshing.CompareAndSwap(false, true) {
		return
	}
	e.lastTry.Store(now.UnixNano())
	go func() {
		defer e.refreshing.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), max(2*time.Second, 4*e.f.cfg.Deadline))
		defer cancel()
		names, slots, err := r.Topology(ctx)
		if err != nil || len(names) == 0 || slots != nil && len(slots) != Slots {
			e.f.log.Debug("fleet: redis topology", "err", err, "endpoints", len(names))
			return
		}
		e.swap(names, slots)
		e.known.Store(true)
	}()
}

func (e *endpoints) swap(names []string, slots []uint16) {
	e.mu.Lock()
	old := e.top.Load()
	byName := make(map[string]*endpoint, len(old.eps))
	for _, ep := range old.eps {
		byName[ep.name] = ep
	}
	t := &topology{slots: slots}
	for _, n := range names {
		ep := byName[n]
		if ep == nil {
			ep = e.newEndpoint(n)
			e.f.met.setEndpoint(n, BreakerClosed)
			e.f.log.Info("fleet: redis endpoint", "endpoint", n)
		}
		delete(byName, n)
		t.eps = append(t.eps, ep)
	}
	count := make([]int64, len(t.eps))
	if slots == nil {
		count[0] = Slots
	} else {
		for _, i := range slots {
			count[i]++
		}
	}
	for i, ep := range t.eps {
		ep.slots.Store(count[i])
	}
	for n := range byName {
		e.f.met.dropEndpoint(n)
	}
	e.top.Store(t)
	e.mu.Unlock()
	e.recompute()
}

// EndpointStatus is one endpoint's part of guardd status.
type EndpointStatus struct {
	Name    string
	Breaker string
	Slots   int // hash slots it serves (16384 outside Cluster)
}

func (e *endpoints) status() (out []EndpointStatus, worst BreakerState) {
	for _, ep := range e.top.Load().eps {
		s := ep.br.State()
		worst = max(worst, s)
		out = append(out, EndpointStatus{Name: ep.name, Breaker: s.String(), Slots: int(ep.slots.Load())})
	}
	return out, worst
}

// KeySlot returns the Redis Cluster hash slot of key: CRC16 (XMODEM) of
// its hash tag (between the first '{' and the next '}', when not empty),
// else of the whole key, mod Slots.
func KeySlot[S ~string | ~[]byte](key S) uint16 {
	for i := 0; i < len(key); i++ {
		if key[i] != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j > i+1 {
					key = key[i+1 : j]
				}
				break
			}
		}
		break
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc = crc<<8 ^ crc16tab[byte(crc>>8)^key[i]]
	}
	return crc % Slots
}

var crc16tab = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

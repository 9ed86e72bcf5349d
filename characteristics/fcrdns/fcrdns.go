package fcrdns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Verdict is what a Verifier knows of an address: a closed set.
type Verdict uint8

// Verdicts.
const (
	Pending  Verdict = iota // not looked up yet, or no answer: do not judge the name
	Verified                // the PTR name ends in a crawler's domain and resolves back
	Failed                  // no PTR, another domain, or a name that does not resolve back
)

var verdictNames = [...]string{"pending", "verified", "failed"}

func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return "other"
}

// Config configures a Verifier. Zero fields take the defaults given.
type Config struct {
	// Resolver is the DNS server, host:port (required).
	Resolver string
	// TTL is how long a verified address stays verified (default 24h);
	// NegativeTTL how long a failed one stays failed (default 1h);
	// RetryTTL how long an unanswered one waits before it is asked again
	// (default 1m).
	TTL, NegativeTTL, RetryTTL time.Duration
	// MaxEntries bounds the cache (default 65536 addresses).
	MaxEntries int
	// QPS bounds the lookups a second (default 20); each lookup is a PTR
	// query and one A or AAAA query per name returned.
	QPS float64
	// Timeout bounds one lookup (default 2s).
	Timeout time.Duration
	// Workers is how many lookups run at once (default 4); Queue how many
	// wait (default 256).
	Workers, Queue int
}

// entry is a cached verdict. A worker's answer carries its ttl and no
// expiry: the next Check starts it at its own now, so that every expiry is
// on the caller's clock (event time in a replay).
type entry struct {
	verdict Verdict
	expires time.Time
	ttl     time.Duration
}

type job struct {
	addr     netip.Addr
	suffixes []string
}

// Verifier checks addresses against crawlers' domains. See the package doc.
type Verifier struct {
	cfg      Config
	resolver *net.Resolver

	mu    sync.Mutex
	cache map[netip.Addr]entry

	queue   chan job
	start   sync.Once
	stop    context.CancelFunc
	wg      sync.WaitGroup
	closed  bool
	lookups chan struct{} // one token per allowed lookup
}

// New validates cfg. It starts nothing: workers start on the first Check.
func New(cfg Config) (*Verifier, error) {
	if cfg.Resolver == "" {
		return nil, errors.New("fcrdns: resolver: empty; want host:port")
	}
	host, port, err := net.SplitHostPort(cfg.Resolver)
	if err != nil || host == "" || port == "" {
		return nil, fmt.Errorf("fcrdns: resolver %q: want host:port", cfg.Resolver)
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&cfg.TTL, 24*time.Hour)
	def(&cfg.NegativeTTL, time.Hour)
	def(&cfg.RetryTTL, time.Minute)
	def(&cfg.Timeout, 2*time.Second)
	if cfg.MaxEntries == 0 {
		cfg.MaxEntries = 1 << 16
	}
	if cfg.QPS == 0 {
		cfg.QPS = 20
	}
	if cfg.Workers == 0 {
		cfg.Workers = 4
	}
	if cfg.Queue == 0 {
		cfg.Queue = 256
	}
	if cfg.TTL < 0 || cfg.NegativeTTL < 0 || cfg.RetryTTL < 0 || cfg.Timeout < 0 || cfg.MaxEntries < 0 || cfg.QPS < 0 || cfg.Workers < 0 || cfg.Queue < 0 {
		return nil, errors.New("fcrdns: negative ttl, timeout, max_entries, qps, workers or queue")
	}
	v := &Verifier{cfg: cfg, cache: make(map[netip.Addr]entry), queue: make(chan job, cfg.Queue), lookups: make(chan struct{}, 1)}
	addr := cfg.Resolver
	v.resolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	return v, nil
}

// Check returns what is known of addr as a crawler whose PTR names end in
// one of suffixes (lower case, without a leading dot: "googlebot.com"). An
// address not known, or known only as unanswered and due again, is queued
// for a lookup and reported Pending. suffixes must not change between calls
// for one crawler; it is kept until the lookup is done.
func (v *Verifier) Check(addr netip.Addr, suffixes []string, now time.Time) Verdict {
	v.start.Do(v.run)
	addr = addr.Unmap()
	v.mu.Lock()
	e, ok := v.cache[addr]
	if ok && e.expires.IsZero() {
		e.expires = now.Add(e.ttl)
		v.cache[addr] = e
	}
	if ok && now.Before(e.expires) {
		v.mu.Unlock()
		return e.verdict
	}
	if v.closed {
		v.mu.Unlock()
		return Pending
	}
	// Pending until the worker answers; asked again after RetryTTL when
	// the queue is full or the answer never comes.
	v.putLocked(addr, entry{verdict: Pending, expires: now.Add(v.cfg.RetryTTL)})
	v.mu.Unlock()
	select {
	case v.queue <- job{addr: addr, suffixes: suffixes}:
	default:
	}
	return Pending
}

// putLocked stores e for addr, forgetting an arbitrary other address when
// the cache is full.
func (v *Verifier) putLocked(addr netip.Addr, e entry) {
	if _, ok := v.cache[addr]; !ok && len(v.cache) >= v.cfg.MaxEntries {
		for k := range v.cache {
			delete(v.cache, k)
			break
		}
	}
	v.cache[addr] = e
}

// Len returns how many addresses the cache holds.
func (v *Verifier) Len() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.cache)
}

func (v *Verifier) run() {
	ctx, cancel := context.WithCancel(context.Background())
	v.stop = cancel
	interval := time.Duration(float64(time.Second) / v.cfg.QPS)
	v.wg.Add(1 + v.cfg.Workers)
	go func() { // the rate: one token per interval, none saved up beyond one
		defer v.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				select {
				case v.lookups <- struct{}{}:
				default:
				}
			}
		}
	}()
	for range v.cfg.Workers {
		go func() {
			defer v.wg.Done()
			for {
				var j job
				select {
				case <-ctx.Done():
					return
				case j = <-v.queue:
				}
				select {
				case <-ctx.Done():
					return
				case <-v.lookups:
				}
				verdict := v.lookup(ctx, j)
				ttl := v.cfg.RetryTTL
				switch verdict {
				case Verified:
					ttl = v.cfg.TTL
				case Failed:
					ttl = v.cfg.NegativeTTL
				}
				v.mu.Lock()
				if !v.closed {
					v.putLocked(j.addr, entry{verdict: verdict, ttl: ttl})
				}
				v.mu.Unlock()
			}
		}()
	}
}

// lookup does one forward-confirmed reverse lookup.
func (v *Verifier) lookup(ctx context.Context, j job) Verdict {
	ctx, cancel := context.WithTimeout(ctx, v.cfg.Timeout)
	defer cancel()
	names, err := v.resolver.LookupAddr(ctx, j.addr.String())
	if err != nil {
		var de *net.DNSError
		if errors.As(err, &de) && de.IsNotFound {
			return Failed
		}
		return Pending
	}
	unanswered := false
	for _, name := range names {
		name = strings.ToLower(strings.TrimSuffix(name, "."))
		if !domainOf(name, j.suffixes) {
			continue
		}
		network := "ip4"
		if j.addr.Is6() {
			network = "ip6"
		}
		addrs, err := v.resolver.LookupNetIP(ctx, network, name)
		if err != nil {
			var de *net.DNSError
			if !errors.As(err, &de) || !de.IsNotFound {
				unanswered = true
			}
			continue
		}
		for _, a := range addrs {
			if a.Unmap() == j.addr {
				return Verified
			}
		}
	}
	if unanswered {
		return Pending
	}
	return Failed
}

// domainOf reports whether name is one of suffixes or a name under one.
func domainOf(name string, suffixes []string) bool {
	for _, s := range suffixes {
		if name == s || (strings.HasSuffix(name, s) && name[len(name)-len(s)-1] == '.') {
			return true
		}
	}
	return false
}

// Close stops the workers and waits for them; it is safe to repeat.
func (v *Verifier) Close() error {
	v.start.Do(func() {}) // no workers after Close
	v.mu.Lock()
	v.closed = true
	v.mu.Unlock()
	if v.stop != nil {
		v.stop()
	}
	v.wg.Wait()
	return nil
}

package counting

import (
	"fmt"
	"math"
	"time"
)

// Algorithm selects how a Table turns events into a rate decision.
type Algorithm uint8

// Algorithms. The zero value is SlidingWindow.
const (
	// SlidingWindow is Cloudflare's sliding window counter: two fixed
	// windows, the previous one weighted by how much of it still overlaps
	// the sliding period. Constant memory per key, approximate.
	SlidingWindow Algorithm = iota
	// FixedWindow counts per aligned period and resets at its end.
	FixedWindow
	// SlidingLog keeps the event times of each key and is exact, at
	// 12 bytes per logged event; it is for small limits (see Limit).
	SlidingLog
	// TokenBucket holds Requests tokens, refilled at Requests per Period.
	TokenBucket
	// GCRA is the generic cell rate algorithm: emission interval
	// Period/Requests, burst Requests.
	GCRA

	numAlgorithms
)

var algorithmNames = [numAlgorithms]string{
	SlidingWindow: "sliding_window",
	FixedWindow:   "fixed_window",
	SlidingLog:    "sliding_log",
	TokenBucket:   "token_bucket",
	GCRA:          "gcra",
}

// String returns the configuration name of a, or "other" for an unknown
// value, so it is safe as a metric label.
func (a Algorithm) String() string {
	if a < numAlgorithms {
		return algorithmNames[a]
	}
	return "other"
}

// ParseAlgorithm parses a configuration name. The empty string means
// SlidingWindow.
func ParseAlgorithm(s string) (Algorithm, error) {
	if s == "" {
		return SlidingWindow, nil
	}
	for a, name := range algorithmNames {
		if s == name {
			return Algorithm(a), nil
		}
	}
	return 0, fmt.Errorf("counting: unknown algorithm %q; expect 'sliding_window', 'fixed_window', 'sliding_log', 'token_bucket' or 'gcra'", s)
}

// Limit is a rate: Requests per Period. Requests is a float64 because a
// rule in score mode adds up a value such as request_time rather than 1 per
// event.
type Limit struct {
	Algorithm Algorithm
	Period    time.Duration
	Requests  float64
	// Burst is how much may arrive at once under TokenBucket (its
	// capacity) and GCRA (its burst tolerance, in events); the rate stays
	// Requests per Period. 0 means Requests. Other algorithms take no burst.
	Burst float64
}

// Capacity is what a key may use at once: Burst when set, else Requests.
func (l Limit) Capacity() float64 {
	if l.Burst > 0 {
		return l.Burst
	}
	return l.Requests
}

// Validate checks l as NewTable does.
func (l Limit) Validate() error { return Config{Limit: l}.validate() }

// Bounds checked by NewTable.
const (
	// MaxPeriod keeps window arithmetic on unix-nanosecond times far from
	// int64 overflow.
	MaxPeriod = 366 * 24 * time.Hour
	// MaxLogRequests is the largest Requests a SlidingLog accepts: its log
	// holds ceil(Requests)+1 entries per key.
	MaxLogRequests = 1024
	// DefaultMaxKeys is the key cap when Config.MaxKeys is 0.
	DefaultMaxKeys = 1 << 20
	// DefaultShards is the shard count when Config.Shards is 0, lowered
	// so that each shard holds at least 64 keys.
	DefaultShards = 64
)

// Config configures a Table. The zero value of each field means its default;
// Limit has no default and must be set.
type Config struct {
	Limit Limit
	// MaxKeys is a hard cap on tracked keys; 0 means DefaultMaxKeys. When
	// a shard is full, a new key evicts a lightly used one (see doc.go).
	MaxKeys int
	// Shards is the number of independently locked shards, rounded up to
	// a power of two; 0 means DefaultShards. It must not exceed MaxKeys.
	Shards int
}

func (c Config) validate() error {
	l := c.Limit
	if l.Algorithm >= numAlgorithms {
		return fmt.Errorf("counting: limit: unknown algorithm %d", l.Algorithm)
	}
	if l.Period <= 0 || l.Period > MaxPeriod {
		return fmt.Errorf("counting: limit: period %v: must be > 0 and <= %v", l.Period, MaxPeriod)
	}
	if !(l.Requests > 0) || math.IsInf(l.Requests, 0) {
		return fmt.Errorf("counting: limit: requests %v: must be a positive finite number", l.Requests)
	}
	if l.Algorithm == SlidingLog && l.Requests > MaxLogRequests {
		return fmt.Errorf("counting: limit: requests %v: sliding_log keeps ceil(requests)+1 event times per key and accepts at most %d; use sliding_window for larger limits", l.Requests, MaxLogRequests)
	}
	if l.Burst != 0 && (!(l.Burst > 0) || math.IsInf(l.Burst, 0)) {
		return fmt.Errorf("counting: limit: burst %v: must be a positive finite number", l.Burst)
	}
	if l.Burst != 0 && l.Algorithm != TokenBucket && l.Algorithm != GCRA {
		return fmt.Errorf("counting: limit: burst applies to token_bucket and gcra, not %s", l.Algorithm)
	}
	if l.Algorithm == GCRA && float64(l.Period)/l.Requests < 1 {
		return fmt.Errorf("counting: limit: gcra emission interval %v/%v is under a nanosecond", l.Period, l.Requests)
	}
	if c.MaxKeys < 0 {
		return fmt.Errorf("counting: max keys %d: must be >= 0", c.MaxKeys)
	}
	if c.Shards < 0 {
		return fmt.Errorf("counting: shards %d: must be >= 0", c.Shards)
	}
	if c.Shards > 1<<16 {
		return fmt.Errorf("counting: shards %d: must be <= %d", c.Shards, 1<<16)
	}
	maxKeys := c.MaxKeys
	if maxKeys == 0 {
		maxKeys = DefaultMaxKeys
	}
	if c.Shards > maxKeys {
		return fmt.Errorf("counting: shards %d: more than max keys %d", c.Shards, maxKeys)
	}
	return nil
}

// Result is what a Table reports for one key after Add or at Peek.
type Result struct {
	// Count is the algorithm's estimate of usage in the current period,
	// after this Add. For TokenBucket it is Requests minus the tokens left;
	// for GCRA the usage implied by the theoretical arrival time.
	Count float64
	// Exceeded says this Add went over the limit (Count > Requests for the
	// window algorithms; for TokenBucket and GCRA, the event did not
	// conform and consumed nothing). For Peek, see Table.Peek.
	Exceeded bool
	// Remaining is what is left before the limit, >= 0.
	Remaining float64
	// RetryAfter is set when Exceeded: the algorithm's own arithmetic for
	// how long until an event of the same size would be allowed, if none
	// came meanwhile. For a size above Requests it is the time to a full
	// reset (such an event is never allowed by TokenBucket or GCRA).
	RetryAfter time.Duration
	// Reset is the time until the key's usage is back to zero.
	Reset time.Duration
}

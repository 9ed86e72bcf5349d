package scoring

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// RuleName is the rule name of the mitigations a score makes: it names no
// loaded rule (rules refuses a rule package of that name), so the
// mitigation covers every request of its scope.
const RuleName = "anomaly_score"

// Level is what a score has reached. Its String is a closed set, safe as a
// metric label.
type Level uint8

// Levels, weakest first.
const (
	LevelNone Level = iota
	LevelChallenge
	LevelBlock
	numLevels
)

var levelNames = [numLevels]string{"none", "challenge", "block"}

func (l Level) String() string {
	if l < numLevels {
		return levelNames[l]
	}
	return "other"
}

// Defaults of Config's zero fields.
const (
	DefaultHalfLife = 10 * time.Minute
	DefaultMaxKeys  = 100_000
	// maxContributions is how many rules' shares a key holds: the
	// strongest are kept.
	maxContributions = 8
)

// Config configures a Table.
type Config struct {
	// HalfLife is the time after which a score is worth half; 0 means 10m.
	HalfLife time.Duration
	// MaxKeys bounds the keys held; 0 means 100,000.
	MaxKeys int
}

// Contribution is one rule's share of a score, decayed to the time asked.
type Contribution struct {
	Rule   string  `json:"rule"`
	Points float64 `json:"points"`
}

// entry is one key's score: the sum of its rules' shares.
type entry struct {
	at  int64 // unix nanoseconds of the last decay
	why [maxContributions]Contribution
}

func (e *entry) score() float64 {
	var s float64
	for _, c := range e.why {
		s += c.Points
	}
	return s
}

// Table holds a decaying score per key (an address as a single-address
// prefix, or a network). It is safe for concurrent use.
type Table struct {
	// sum: a rule's shares add up (a network's score is its clients');
	// otherwise a rule's share is at most its points.
	sum  bool
	mu   sync.Mutex
	rate float64 // decay per nanosecond: score *= exp(-rate*dt)
	max  int
	keys map[netip.Prefix]*entry
}

// NewTable validates cfg.
func NewTable(cfg Config) (*Table, error) {
	if cfg.HalfLife < 0 || cfg.MaxKeys < 0 {
		return nil, errors.New("scoring: negative HalfLife or MaxKeys")
	}
	hl := cmp.Or(cfg.HalfLife, DefaultHalfLife)
	return &Table{rate: math.Ln2 / float64(hl), max: cmp.Or(cfg.MaxKeys, DefaultMaxKeys), keys: map[netip.Prefix]*entry{}}, nil
}

// decayLocked brings e to now. Time never runs backwards for a score: an
// older event (a log line late behind a decision) adds at the newest time.
func (t *Table) decayLocked(e *entry, now int64) {
	if now <= e.at {
		return
	}
	f := math.Exp(-t.rate * float64(now-e.at))
	for i := range e.why {
		e.why[i].Points *= f
	}
	e.at = now
}

// Add gives key points for rule at now and returns the key's score and how
// much it grew. A
// rule's share of a score is at most its points: signals of different
// rules add up, while one rule matching again only brings its share back
// to full (repetition is for rules that count it to say).
func (t *Table) Add(key netip.Prefix, rule string, points float64, now time.Time) (score, grew float64) {
	if !(points > 0) || math.IsInf(points, 0) {
		return t.Score(key, now), 0
	}
	ns := now.UnixNano()
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.keys[key]
	if e == nil {
		if len(t.keys) >= t.max {
			t.evictLocked(ns)
		}
		e = &entry{at: ns}
		t.keys[key] = e
	}
	t.decayLocked(e, ns)
	before := e.score()
	e.credit(rule, points, t.sum)
	score = e.score()
	return score, score - before
}

// credit brings rule's share up to points, or gives rule a free slot, or
// the weakest share's slot if points outweigh it.
func (e *entry) credit(rule string, points float64, sum bool) {
	slot := -1
	for i := range e.why {
		c := &e.why[i]
		switch {
		case c.Rule == rule && sum:
			c.Points += points
			return
		case c.Rule == rule:
			c.Points = max(c.Points, points)
			return
		case slot >= 0 && e.why[slot].Rule == "":
			// a free slot is already chosen
		case c.Rule == "" || slot < 0 || c.Points < e.why[slot].Points:
			slot = i
		}
	}
	if e.why[slot].Rule == "" || e.why[slot].Points < points {
		e.why[slot] = Contribution{Rule: rule, Points: points}
	}
}

// evictLocked forgets at least a quarter of the keys, the lowest scores
// first, so a flood of distinct keys costs O(log n) per key and keeps the
// heavy hitters.
func (t *Table) evictLocked(now int64) {
	scores := make([]float64, 0, len(t.keys))
	for _, e := range t.keys {
		t.decayLocked(e, now)
		scores = append(scores, e.score())
	}
	slices.Sort(scores)
	quarter := max(1, len(scores)/4)
	cut := scores[quarter-1]
	n := 0
	for k, e := range t.keys {
		if e.score() <= cut && n < quarter {
			delete(t.keys, k)
			n++
		}
	}
}

// Score returns key's score at now, 0 if it has none.
func (t *Table) Score(key netip.Prefix, now time.Time) float64 {
	s, _ := t.Explain(key, now)
	return s
}

// Explain returns key's score at now and the rules that made it, strongest
// first.
func (t *Table) Explain(key netip.Prefix, now time.Time) (float64, []Contribution) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.keys[key]
	if e == nil {
		return 0, nil
	}
	t.decayLocked(e, now.UnixNano())
	var out []Contribution
	for _, c := range e.why {
		if c.Rule != "" {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b Contribution) int { return cmp.Compare(b.Points, a.Points) })
	return e.score(), out
}

// Len returns how many keys are held.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.keys)
}

// Thresholds decide a score's Level: a score at or over ChallengeAt is
// challenged, at or over BlockAt blocked. A zero threshold never decides.
type Thresholds struct {
	ChallengeAt, BlockAt float64
}

// Level returns the level score has reached.
func (th Thresholds) Level(score float64) Level {
	switch {
	case th.BlockAt > 0 && score >= th.BlockAt:
		return LevelBlock
	case th.ChallengeAt > 0 && score >= th.ChallengeAt:
		return LevelChallenge
	}
	return LevelNone
}

// Validate checks that the thresholds are usable.
func (th Thresholds) Validate() error {
	switch {
	case th.ChallengeAt < 0 || th.BlockAt < 0 || math.IsNaN(th.ChallengeAt) || math.IsNaN(th.BlockAt):
		return fmt.Errorf("thresholds must be >= 0 (0 turns one off), got challenge_at %v, block_at %v", th.ChallengeAt, th.BlockAt)
	case th.ChallengeAt > 0 && th.BlockAt > 0 && th.BlockAt < th.ChallengeAt:
		return fmt.Errorf("block_at %v is below challenge_at %v: a client would be blocked before it could be challenged", th.BlockAt, th.ChallengeAt)
	}
	return nil
}

// Scorer adds a tripped rule's points to a client's address and network and
// says what each has reached.
type Scorer struct {
	clients, networks *Table
	client, network   Thresholds
	bitsV4, bitsV6    int
}

// ScorerConfig configures a Scorer.
type ScorerConfig struct {
	Table Config
	// Client and Network are the thresholds of an address's and of a
	// network's score. A network holds many clients (an office, a carrier's
	// NAT): its thresholds should be higher, and its block is best left off.
	Client, Network Thresholds
	// PrefixV4 and PrefixV6 cut an address to its network; 0 means 24 and 64.
	PrefixV4, PrefixV6 int
}

// NewScorer validates cfg.
func NewScorer(cfg ScorerConfig) (*Scorer, error) {
	if err := cfg.Client.Validate(); err != nil {
		return nil, fmt.Errorf("scoring: client %w", err)
	}
	if err := cfg.Network.Validate(); err != nil {
		return nil, fmt.Errorf("scoring: network %w", err)
	}
	v4, v6 := cmp.Or(cfg.PrefixV4, 24), cmp.Or(cfg.PrefixV6, 64)
	if v4 < 1 || v4 > 32 || v6 < 1 || v6 > 128 {
		return nil, fmt.Errorf("scoring: prefix lengths %d and %d: want 1-32 and 1-128", v4, v6)
	}
	c, err := NewTable(cfg.Table)
	if err != nil {
		return nil, err
	}
	n, err := NewTable(cfg.Table)
	if err != nil {
		return nil, err
	}
	n.sum = true
	return &Scorer{clients: c, networks: n, client: cfg.Client, network: cfg.Network, bitsV4: v4, bitsV6: v6}, nil
}

// With returns a scorer with cfg's thresholds and prefix lengths over s's
// scores: a reload changes what a score leads to, not the scores. (cfg's
// own tables are left unused.)
func (s *Scorer) With(cfg *Scorer) *Scorer {
	n := *cfg
	n.clients, n.networks = s.clients, s.networks
	return &n
}

// Network returns addr's network as the scorer cuts it.
func (s *Scorer) Network(addr netip.Addr) netip.Prefix {
	addr = addr.Unmap().WithZone("")
	bits := s.bitsV6
	if addr.Is4() {
		bits = s.bitsV4
	}
	p, _ := addr.Prefix(bits)
	return p
}

// Outcome is what one contribution made of a client's and its network's
// scores.
type Outcome struct {
	Client, Network           Level
	ClientScore, NetworkScore float64
	Net                       netip.Prefix
}

// Add gives addr and its network points for rule at now.
func (s *Scorer) Add(addr netip.Addr, rule string, points float64, now time.Time) Outcome {
	addr = addr.Unmap().WithZone("")
	o := Outcome{Net: s.Network(addr)}
	var grew float64
	o.ClientScore, grew = s.clients.Add(netip.PrefixFrom(addr, addr.BitLen()), rule, points, now)
	o.Client = s.client.Level(o.ClientScore)
	if s.network != (Thresholds{}) {
		// What the client's score grew by: a network's score is the sum
		// of its clients', and one client repeating itself adds nothing.
		o.NetworkScore, _ = s.networks.Add(o.Net, rule, grew, now)
		o.Network = s.network.Level(o.NetworkScore)
	}
	return o
}

// Explain returns addr's score at now and the rules that made it.
func (s *Scorer) Explain(addr netip.Addr, now time.Time) (float64, []Contribution) {
	addr = addr.Unmap().WithZone("")
	return s.clients.Explain(netip.PrefixFrom(addr, addr.BitLen()), now)
}

package config

import (
	"cmp"
	"time"

	"github.com/guardd/guardd/scoring"
)

// ScoringConfig sets the anomaly scores that rules with anomaly_score add
// to (docs/rules.md "Anomaly scores"). A threshold of 0 turns it off.
type ScoringConfig struct {
	// ChallengeAt and BlockAt are the client address's thresholds:
	// defaults 5 and 15.
	ChallengeAt float64 `yaml:"challenge_at"`
	BlockAt     float64 `yaml:"block_at"`
	// NetworkChallengeAt and NetworkBlockAt are those of the client's
	// network (ip.src.prefix), whose score adds up its clients': a busy
	// office or carrier NAT holds many people, so the default challenges
	// at 40 and never blocks.
	NetworkChallengeAt float64 `yaml:"network_challenge_at"`
	NetworkBlockAt     float64 `yaml:"network_block_at"`
	// HalfLife is the time after which a score is worth half; 0 means 10m.
	HalfLife time.Duration `yaml:"half_life"`
	// MitigationTimeout is how long a threshold's mitigation lasts after
	// the contribution that reached it; 0 means 1h.
	MitigationTimeout time.Duration `yaml:"mitigation_timeout"`
	// MaxKeys bounds the addresses (and, apart, networks) scored; 0 means
	// 100,000. Past it the lowest scores are forgotten first.
	MaxKeys int `yaml:"max_keys"`
}

// DefaultScoring is the scoring of an empty configuration.
var DefaultScoring = ScoringConfig{ChallengeAt: 5, BlockAt: 15, NetworkChallengeAt: 40}

// DefaultScoringTimeout is ScoringConfig.MitigationTimeout's default.
const DefaultScoringTimeout = time.Hour

// Timeout returns how long a threshold's mitigation lasts.
func (s ScoringConfig) Timeout() time.Duration {
	return cmp.Or(s.MitigationTimeout, DefaultScoringTimeout)
}

// Scorer builds the scorer, with networks cut at the characteristics'
// prefix lengths.
func (s ScoringConfig) Scorer(prefixV4, prefixV6 int) (*scoring.Scorer, error) {
	return scoring.NewScorer(scoring.ScorerConfig{
		Table:    scoring.Config{HalfLife: s.HalfLife, MaxKeys: s.MaxKeys},
		Client:   scoring.Thresholds{ChallengeAt: s.ChallengeAt, BlockAt: s.BlockAt},
		Network:  scoring.Thresholds{ChallengeAt: s.NetworkChallengeAt, BlockAt: s.NetworkBlockAt},
		PrefixV4: prefixV4,
		PrefixV6: prefixV6,
	})
}

package rules

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/guardd/guardd/action"
	"github.com/guardd/guardd/characteristics"
)

// Challenge is what a rule with action challenge asks of a client
// (DESIGN.md "Challenges"): which proof its page wants, how hard, and what a
// request that is not a page view gets instead of the page.
type Challenge struct {
	// Tier is the proof the page asks for.
	Tier ChallengeTier
	// Difficulty is the proof of work's leading zero bits; 0 means the
	// configuration's default.
	Difficulty int
	// Fallback answers a request that is never shown a page (a method other
	// than GET or HEAD, or an Accept header without text/html):
	// rate_limit (429 with Retry-After, the default), block or log.
	Fallback action.Action
}

// ChallengeTier is the proof a challenge page asks for. Its String is a
// closed set, safe as a metric label.
type ChallengeTier uint8

// Tiers.
const (
	// TierProofOfWork: JavaScript finds a SHA-256 proof of work; a client
	// without JavaScript never passes. The default.
	TierProofOfWork ChallengeTier = iota
	// TierCookie: a meta refresh to a signed nonce; a client passes by
	// keeping the cookie it is given, no JavaScript needed.
	TierCookie
	numTiers
)

var tierNames = [numTiers]string{TierProofOfWork: "pow", TierCookie: "cookie"}

func (t ChallengeTier) String() string {
	if t < numTiers {
		return tierNames[t]
	}
	return "other"
}

// ParseChallengeTier reads a tier as written in challenge_tier.
func ParseChallengeTier(s string) (ChallengeTier, error) {
	for i, n := range tierNames {
		if s == n {
			return ChallengeTier(i), nil
		}
	}
	return 0, fmt.Errorf("unknown challenge tier %q; expect 'pow' or 'cookie'", s)
}

// MaxChallengeDifficulty bounds challenge_difficulty: 2^28 hashes is minutes
// of a phone's time, already more than any person waits.
const MaxChallengeDifficulty = 28

// challengeFallbacks are the actions challenge_fallback accepts: a refusal
// a client without a browser understands, or nothing.
var challengeFallbacks = []string{"rate_limit", "block", "log"}

// challenge reads challenge_tier, challenge_difficulty and
// challenge_fallback, which apply to action challenge only.
func (mr metaReader) challenge(custom map[string]any, r *Rule) {
	keys := []string{"challenge_tier", "challenge_difficulty", "challenge_fallback"}
	if r.Action != action.Challenge {
		for _, k := range keys {
			if _, ok := custom[k]; ok {
				mr.fail(k, "applies to action challenge")
			}
		}
		return
	}
	r.Challenge.Fallback = action.RateLimit
	if v, ok := custom["challenge_tier"]; ok {
		s, _ := v.(string)
		t, err := ParseChallengeTier(strings.TrimSpace(s))
		if err != nil {
			mr.fail("challenge_tier", "%v", err)
		}
		r.Challenge.Tier = t
	}
	if _, ok := custom["challenge_difficulty"]; ok {
		n := mr.number(custom, "challenge_difficulty")
		if n != 0 && (n != math.Trunc(n) || n > MaxChallengeDifficulty) {
			mr.fail("challenge_difficulty", "%v: want a whole number of leading zero bits from 1 to %d", n, MaxChallengeDifficulty)
		} else {
			r.Challenge.Difficulty = int(n)
		}
	}
	if f := mr.choice(custom, "challenge_fallback", "rate_limit", challengeFallbacks); f != "" {
		r.Challenge.Fallback, _ = action.Parse(f)
	}
}

// AnomalyScoreRule is the rule name of the mitigations anomaly scores make
// (scoring.RuleName); no rule package may take it.
const AnomalyScoreRule = "anomaly_score"

// MaxAnomalyScore bounds anomaly_score: more than this is no weak signal,
// and the rule should act itself.
const MaxAnomalyScore = 1000

// anomalyScore reads anomaly_score: points to the client's score per trip.
// The score is the client's, so the rule must be keyed on its address.
func (mr metaReader) anomalyScore(custom map[string]any, r *Rule) {
	if r.Name == AnomalyScoreRule {
		mr.errs.add(mr.src.file, r.Line, "package name %s is reserved for the mitigations anomaly scores make; rename the package", AnomalyScoreRule)
	}
	if _, ok := custom["anomaly_score"]; !ok {
		return
	}
	n := mr.number(custom, "anomaly_score")
	switch {
	case n > MaxAnomalyScore:
		mr.fail("anomaly_score", "%v: at most %d; a signal that strong should act itself (action: block)", n, MaxAnomalyScore)
	case r.Action == action.Throttle:
		mr.fail("anomaly_score", "not for action throttle: a throttle rule refuses requests one by one")
	case !slices.ContainsFunc(r.Characteristics, func(c characteristics.Characteristic) bool { return c.String() == "ip.src" }):
		mr.fail("anomaly_score", "the score is the client's: the rule's characteristics must include ip.src")
	default:
		r.AnomalyScore = n
	}
}

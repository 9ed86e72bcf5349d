// Package scoring keeps anomaly scores: weak signals that add up before
// anything is refused, as OWASP CRS's anomaly scoring adds each matching
// rule's points to a request's score and lets thresholds decide.
//
// A rule with anomaly_score: N (rules.Rule.AnomalyScore) does not act alone:
// when it trips, its share of the client's score (and of its network's)
// becomes N. Different rules' shares add up; the same rule tripping again
// only refreshes its share, so one weak signal repeated is still one weak
// signal (rules that count repetition say when repetition is certainty).
// A score decays exponentially (Config.HalfLife), so weak signals
// count together only when they come close in time. Scorer turns a score
// into a Level against the configured thresholds: the caller makes the
// mitigation (a challenge, then a block) with the rule name RuleName.
//
// What it promises: memory is bounded (Config.MaxKeys per table; under a
// flood of distinct keys the lowest scores are forgotten first, the heavy
// hitters kept); time is always the caller's; every method is safe for
// concurrent use. What it gives up: scores live on one node and do not
// survive a restart — the mitigations they made do (the mitigation store
// persists them).
package scoring

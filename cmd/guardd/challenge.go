package main

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/guardd/guardd/challenge"
	"github.com/guardd/guardd/config"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/decision"
)

// newChallengeGate reads (or, on first start, makes) the challenge keys and
// builds the gate the decision API serves challenges with; an escalated
// client becomes a block mitigation in store.
func newChallengeGate(cfg *config.Config, store *mitigation.Store, reg prometheus.Registerer, log *slog.Logger) (*challenge.Gate, error) {
	keys, err := challenge.LoadKeyring(cfg.ChallengeKeyFile())
	if err != nil {
		return nil, err
	}
	ch := cfg.Challenge
	return challenge.New(challenge.Config{Keys: keys, Cookie: ch.Cookie, ClearanceTTL: ch.ClearanceTTL, ChallengeTTL: ch.ChallengeTTL,
		Difficulty: ch.Difficulty, MaxUnsolved: ch.MaxUnsolved, ShareAddresses: ch.ShareAddresses,
		Escalator: &decision.Escalation{Store: store, For: ch.BlockFor, Log: log}, Registerer: reg, Logger: log})
}

package pipeline

import (
	"reflect"

	"github.com/guardd/guardd/config"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/rules"
)

// Reloader is the rules' part in a reload. Prepare builds the Pipeline of
// the new configuration (rules, counters, log format, enrichment, the
// scores' thresholds), so a rule that does not load keeps the running
// configuration everywhere; Apply hands its rules to each of uses (the
// decision API's SetRules) and swaps it in. Batches and decisions still
// using the old Pipeline keep it, and its MaxMind readers, open until they
// finish. The scores themselves are kept: their half-life and their table's
// cap are read at start.
func (h *Holder) Reloader(opts BuildOptions, uses ...func(*rules.Set) error) config.Reloader {
	var next *Pipeline
	return config.Reloader{
		Name:    "rules",
		Live:    []string{"log", "rules", "characteristics", "counting", "scoring"},
		Restart: []string{"scoring.half_life", "scoring.max_keys"},
		Doc: map[string]string{
			"log":      "the log format is rebuilt with the rules",
			"counting": "counters start afresh",
			"scoring":  "thresholds and timeout; the scores are kept",
		},
		Prepare: func(n *config.Config) error {
			o := opts
			if p := h.Load(); o.Scorer == nil && p != nil {
				o.Scorer = p.Scorer() // the scores go on
			}
			p, err := Build(n, o)
			next = p
			return err
		},
		Discard: func() {
			if next != nil {
				next.Release()
				next = nil
			}
		},
		Apply: func(_, _ *config.Config) error {
			p := next
			next = nil
			for _, use := range uses {
				if err := use(p.Rules()); err != nil {
					p.Release()
					return err
				}
			}
			h.Swap(p)
			return nil
		},
	}
}

// StoreReloader is the mitigation store's part in a reload: the allowlist
// applies live (a mitigation it now covers is lifted); the table's
// directory and cap are read at start.
func StoreReloader(s *mitigation.Store) config.Reloader {
	return config.Reloader{
		Name:    "mitigation",
		Live:    []string{"mitigation.allowlist"},
		Restart: []string{"mitigation.state_dir", "mitigation.max_entries"},
		Apply: func(o, n *config.Config) error {
			if reflect.DeepEqual(o.Mitigation.Allowlist, n.Mitigation.Allowlist) {
				return nil
			}
			allow, err := n.Allowlist()
			if err != nil {
				return err
			}
			return s.SetAllowlist(allow)
		},
	}
}

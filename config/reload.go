package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrNeedsRestart marks a change a component cannot apply while running.
var ErrNeedsRestart = errors.New("needs a restart")

// NeedsRestart reports that the fields named changed and take effect only
// on a restart.
func NeedsRestart(fields ...string) error {
	return fmt.Errorf("%s: %w", strings.Join(fields, ", "), ErrNeedsRestart)
}

// Reloader is one component's part in a reload. It declares the keys it
// reads by dotted path (a section standing for its keys): Live the ones
// Apply takes while running, Restart the ones it reads only when it starts.
// Every key of Config is one or the other for some component (cmd/guardd's
// TestReloadCoversConfig), and docs/configuration.md's "reload" column is
// derived from these declarations.
type Reloader struct {
	Name    string
	Live    []string
	Restart []string
	// Doc says more about a key than "yes" or "restart" in the reference,
	// by the longest path holding it: "counters start afresh".
	Doc map[string]string
	// Prepare, when set, builds from the new configuration what Apply will
	// install (rules, enrichment). Every Prepare runs before any Apply: an
	// error from one keeps the running configuration everywhere.
	Prepare func(new *Config) error
	// Discard drops what Prepare built when the reload does not go on.
	Discard func()
	// Apply is handed the running and the new configuration, both valid,
	// the new one holding the running value of every changed key that no
	// component can apply live. It applies what it can and returns an
	// error wrapping ErrNeedsRestart for a change it cannot take under a
	// condition its declarations cannot say (a key live unless another
	// part is on), or another error when applying failed. nil: nothing to
	// apply, only restart-only keys.
	Apply func(old, new *Config) error
}

// ReloadReport is what a reload did.
type ReloadReport struct {
	Applied []string // components that took the new configuration
	Restart []string // "component: keys" that wait for a restart
	Failed  []error  // components that could not apply it
	// Pending lists every changed key that waits for a restart.
	Pending []string
	// Config is the configuration now in force: the new one, where a
	// change that waits for a restart keeps its running value. Nil when a
	// Prepare failed and nothing was applied.
	Config *Config
}

// OK reports whether every component took the new configuration.
func (r ReloadReport) OK() bool { return len(r.Restart) == 0 && len(r.Failed) == 0 }

// Reload hands next to every reloader, in order; started is the
// configuration the components were made with, old the one in force. The
// keys a reloader reads only at start that differ from started are reported
// for a restart without asking it (at every reload until the restart, or
// until they are put back); those that no component applies live keep their
// running values in the configuration Apply is handed and rep.Config.
func Reload(rs []Reloader, started, old, next *Config) ReloadReport {
	var rep ReloadReport
	eff := *next
	restart := make([][]string, len(rs))
	for i, r := range rs {
		for _, p := range r.Restart {
			for _, k := range Diff(started, next, p) {
				if _, rst, _ := r.Claim(k); !rst {
					continue // a longer declaration applies it live
				}
				if !slices.Contains(restart[i], k) {
					restart[i] = append(restart[i], k)
				}
				if !live(rs, k) {
					revert(&eff, started, k)
				}
			}
		}
	}
	for i, r := range rs {
		if r.Prepare == nil {
			continue
		}
		if err := r.Prepare(&eff); err != nil {
			for _, d := range rs[:i] {
				if d.Discard != nil {
					d.Discard()
				}
			}
			rep.Failed = append(rep.Failed, fmt.Errorf("%s: %w", r.Name, err))
			return rep
		}
	}
	for i, r := range rs {
		var err error
		if r.Apply != nil {
			err = r.Apply(old, &eff)
		}
		keys := restart[i]
		waits := len(keys) > 0
		if errors.Is(err, ErrNeedsRestart) {
			waits = true
			rep.Restart = append(rep.Restart, r.Name+": "+err.Error())
			// The keys the error names come before its ": needs a restart".
			msg := strings.TrimSuffix(err.Error(), ": "+ErrNeedsRestart.Error())
			for k := range strings.SplitSeq(msg, ", ") {
				addKey(&rep.Pending, k)
			}
			err = nil
		}
		if len(keys) > 0 {
			rep.Restart = append(rep.Restart, r.Name+": "+NeedsRestart(keys...).Error())
			for _, k := range keys {
				addKey(&rep.Pending, k)
			}
		}
		switch {
		case err != nil:
			rep.Failed = append(rep.Failed, fmt.Errorf("%s: %w", r.Name, err))
		case !waits:
			rep.Applied = append(rep.Applied, r.Name)
		}
	}
	rep.Config = &eff
	return rep
}

func addKey(keys *[]string, k string) {
	if !slices.Contains(*keys, k) {
		*keys = append(*keys, k)
	}
}

// live reports whether some reloader applies key while running.
func live(rs []Reloader, key string) bool {
	return slices.ContainsFunc(rs, func(r Reloader) bool { l, _, _ := r.Claim(key); return l })
}

// Claim says how r takes key, by its longest declaration holding it
// (n, its length): live, or at start only ("scoring" live and
// "scoring.half_life" restart: the half-life is read at start).
func (r Reloader) Claim(key string) (live, restart bool, n int) {
	n = -1
	for _, p := range r.Live {
		if covers(p, key) && len(p) > n {
			n, live, restart = len(p), true, false
		}
	}
	for _, p := range r.Restart {
		if covers(p, key) && len(p) > n {
			n, live, restart = len(p), false, true
		}
	}
	return live, restart, n
}

// ReloadOf is the reference's "reload" column for key: "yes" when some
// component applies it live, "restart" when one reads it only at start,
// both when both, with the components' notes; "" when no component
// declares it.
func ReloadOf(rs []Reloader, key string) string {
	var yes bool
	var restart []string
	var notes []string
	for _, r := range rs {
		l, rst, n := r.Claim(key)
		if l {
			yes = true
		}
		if rst {
			restart = append(restart, r.Name)
		}
		// A note holds for the keys its path holds but a longer
		// declaration does not.
		best := ""
		for p := range r.Doc {
			if covers(p, key) && len(p) > len(best) && len(p) >= n {
				best = p
			}
		}
		if note := r.Doc[best]; best != "" && !slices.Contains(notes, note) {
			notes = append(notes, note)
		}
	}
	var s string
	switch {
	case yes && len(restart) > 0:
		s = "yes; restart for " + strings.Join(restart, ", ")
	case yes:
		s = "yes"
	case len(restart) > 0:
		s = "restart"
	default:
		return ""
	}
	if len(notes) > 0 {
		s += " (" + strings.Join(notes, "; ") + ")"
	}
	return s
}

package config

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNeedsRestart marks a change a component cannot apply while running.
var ErrNeedsRestart = errors.New("needs a restart")

// NeedsRestart reports that the fields named changed and take effect only
// on a restart.
func NeedsRestart(fields ...string) error {
	return fmt.Errorf("%s: %w", strings.Join(fields, ", "), ErrNeedsRestart)
}

// Reloader is one component's part in a reload. Apply is handed the running
// and the new configuration, both valid; it applies what it can and returns
// an error wrapping ErrNeedsRestart for what it cannot (the running value
// stays in force for that part until a restart), or another error when
// applying failed.
type Reloader struct {
	Name  string
	Apply func(old, new *Config) error
}

// ReloadReport is what a reload did.
type ReloadReport struct {
	Applied []string // components that took the new configuration
	Restart []string // "component: fields" that wait for a restart
	Failed  []error  // components that could not apply it
}

// OK reports whether every component took the new configuration.
func (r ReloadReport) OK() bool { return len(r.Restart) == 0 && len(r.Failed) == 0 }

// Reload hands next to every reloader, in order.
func Reload(rs []Reloader, old, next *Config) ReloadReport {
	var rep ReloadReport
	for _, r := range rs {
		err := r.Apply(old, next)
		switch {
		case err == nil:
			rep.Applied = append(rep.Applied, r.Name)
		case errors.Is(err, ErrNeedsRestart):
			rep.Restart = append(rep.Restart, r.Name+": "+err.Error())
		default:
			rep.Failed = append(rep.Failed, fmt.Errorf("%s: %w", r.Name, err))
		}
	}
	return rep
}

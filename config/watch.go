package config

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Changed reports whether the configuration file or a rule file of cfg
// changed since the last call, by modification time and size; the first
// call only takes note. Dirs are read from the Config it is handed, so a
// reload that adds a rule directory is watched from then on.
type Changed struct {
	Path string // the configuration file
	last string
}

// Check takes note of the files now and reports whether they differ from
// the last Check.
func (c *Changed) Check(cfg *Config) bool {
	var b strings.Builder
	add := func(p string) {
		if st, err := os.Stat(p); err == nil {
			fmt.Fprintf(&b, "%s:%d:%d;", p, st.Size(), st.ModTime().UnixNano())
		}
	}
	add(c.Path)
	for _, dir := range cfg.Rules.Dirs {
		filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() && strings.HasSuffix(p, ".rego") {
				add(p)
			}
			return nil
		})
	}
	fp := b.String()
	changed := c.last != "" && fp != c.last
	c.last = fp
	return changed
}

// Watch calls reload when hup delivers or, checked every interval, when
// Check reports a change, until ctx ends. current returns the configuration
// in force.
func Watch(ctx context.Context, path string, interval time.Duration, hup <-chan os.Signal, current func() *Config, reload func(why string)) {
	c := &Changed{Path: path}
	c.Check(current())
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			reload("SIGHUP")
		case <-tick.C:
			if !c.Check(current()) {
				continue
			}
			reload("configuration or rules changed")
		}
		c.Check(current())
	}
}

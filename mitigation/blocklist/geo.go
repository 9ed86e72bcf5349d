package blocklist

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// GeoConfig configures a Geo writer. Path is required; every other zero
// field means its default.
type GeoConfig struct {
	// Path is the file written, e.g. /etc/nginx/guardd-blocked.conf.
	Path string `yaml:"path"`
	// Format is "include" (default): "ADDR 1;" lines, for an include
	// inside a geo block of your own; or "geo": a whole
	// `geo $<variable> { default 0; ... }` block for the http context.
	Format string `yaml:"format"`
	// Variable names the geo variable of the "geo" format, without the $;
	// default guardd_blocked.
	Variable string `yaml:"variable"`
	// Actions are the actions listed; default block and firewall.
	Actions []string `yaml:"actions"`
	// ReloadCommand runs after the file changed, e.g. [nginx, -s, reload];
	// none runs nothing. Its exit status is logged.
	ReloadCommand []string `yaml:"reload_command"`
	// ReloadInterval is the least time between two reloads; changes in
	// between are written at once and reloaded together when it has
	// passed. Default 10s.
	ReloadInterval time.Duration `yaml:"reload_interval"`
	// ReloadTimeout bounds one run of the command; default 30s.
	ReloadTimeout time.Duration `yaml:"reload_timeout"`
	// PollInterval is how often the change feed is read; default 1s.
	PollInterval time.Duration `yaml:"poll_interval"`
	// Now is the wall clock; nil means time.Now.
	Now func() time.Time `yaml:"-"`
}

var variableRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// Geo keeps an nginx geo file in step with the mitigation table.
type Geo struct {
	cfg     GeoConfig
	store   Store
	acts    actionSet
	log     *slog.Logger
	writes  prometheus.Counter
	reloads *prometheus.CounterVec

	cursor  uint64
	synced  bool
	content []byte
	reload  debouncer
}

// NewGeo validates cfg. A nil reg registers no metrics; a nil log discards.
func NewGeo(cfg GeoConfig, store Store, reg prometheus.Registerer, log *slog.Logger) (*Geo, error) {
	if store == nil {
		return nil, fmt.Errorf("blocklist: geo: nil store")
	}
	if cfg.Path == "" {
		return nil, fmt.Errorf("blocklist: geo: path: required")
	}
	switch cfg.Format {
	case "":
		cfg.Format = "include"
	case "include", "geo":
	default:
		return nil, fmt.Errorf("blocklist: geo: format %q; expect 'include' or 'geo'", cfg.Format)
	}
	if cfg.Variable == "" {
		cfg.Variable = "guardd_blocked"
	}
	if !variableRE.MatchString(cfg.Variable) {
		return nil, fmt.Errorf("blocklist: geo: variable %q: want letters, digits and _, without the $", cfg.Variable)
	}
	if cfg.ReloadInterval < 0 || cfg.ReloadTimeout < 0 || cfg.PollInterval < 0 {
		return nil, fmt.Errorf("blocklist: geo: intervals and timeout: want 0 (default) or more")
	}
	if cfg.ReloadInterval == 0 {
		cfg.ReloadInterval = 10 * time.Second
	}
	if cfg.ReloadTimeout == 0 {
		cfg.ReloadTimeout = 30 * time.Second
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = time.Second
	}
	if len(cfg.ReloadCommand) > 0 && cfg.ReloadCommand[0] == "" {
		return nil, fmt.Errorf("blocklist: geo: reload_command: empty program name")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	acts, err := parseActions(cfg.Actions)
	if err != nil {
		return nil, fmt.Errorf("blocklist: geo: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g := &Geo{cfg: cfg, store: store, acts: acts, log: log, reload: debouncer{interval: cfg.ReloadInterval}}
	g.writes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "guardd_blocklist_geo_writes_total",
		Help: "Times the nginx geo file was rewritten.",
	})
	g.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "guardd_blocklist_geo_reloads_total",
		Help: "Runs of the reload command after the geo file changed, by result (ok, error).",
	}, []string{"result"})
	if reg != nil {
		reg.MustRegister(g.writes, g.reloads)
	}
	return g, nil
}

// Run writes the file at once (when its content differs from what is on
// disk), then follows the change feed every PollInterval, rewriting the
// file when the listed set changes and running the reload command at most
// once per ReloadInterval. It returns nil when ctx ends; a failure to write
// is logged and retried at the next poll.
func (g *Geo) Run(ctx context.Context) error {
	if old, err := os.ReadFile(g.cfg.Path); err == nil {
		g.content = old
	}
	t := time.NewTicker(g.cfg.PollInterval)
	defer t.Stop()
	for {
		g.step(ctx, g.cfg.Now())
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// step syncs the file with the table and runs a reload that is due.
func (g *Geo) step(ctx context.Context, now time.Time) {
	moved := !g.synced
	if g.synced {
		_, _, cur, ok := g.store.Changes(g.cursor)
		moved = !ok || cur != g.cursor
	}
	if moved {
		ms, cur := g.store.Snapshot(now)
		content := g.render(prefixes(ms, g.acts))
		if !bytes.Equal(content, g.content) {
			if err := writeFileAtomic(g.cfg.Path, content, 0o644); err != nil {
				g.log.Error("blocklist: geo: write failed; retrying at the next poll", "path", g.cfg.Path, "err", err)
				return // cursor unchanged: retried
			}
			g.content = content
			g.writes.Inc()
			g.reload.pending = len(g.cfg.ReloadCommand) > 0
		}
		g.cursor, g.synced = cur, true
	}
	if g.reload.due(now) {
		g.runReload(ctx)
	}
}

func (g *Geo) render(ps []netip.Prefix) []byte {
	b := make([]byte, 0, 64+24*len(ps))
	b = append(b, "# Written by guardd from its mitigation table; do not edit.\n"...)
	indent := ""
	if g.cfg.Format == "geo" {
		b = append(b, "geo $"...)
		b = append(b, g.cfg.Variable...)
		b = append(b, " {\n    default 0;\n"...)
		indent = "    "
	}
	for _, p := range ps {
		b = append(b, indent...)
		b = appendPrefix(b, p)
		b = append(b, " 1;\n"...)
	}
	if g.cfg.Format == "geo" {
		b = append(b, "}\n"...)
	}
	return b
}

func (g *Geo) runReload(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.ReloadTimeout)
	defer cancel()
	argv := g.cfg.ReloadCommand
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out capped
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	code := -1
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
	}
	if err != nil {
		g.reloads.WithLabelValues("error").Inc()
		g.log.Error("blocklist: geo: reload command failed", "command", argv, "exit_status", code, "err", err, "output", out.String(), "seconds", time.Since(start).Seconds())
		return
	}
	g.reloads.WithLabelValues("ok").Inc()
	g.log.Info("blocklist: geo: reloaded", "command", argv, "exit_status", code, "seconds", time.Since(start).Seconds())
}

// capped keeps the first 4 KiB written to it.
type capped struct{ b []byte }

func (c *capped) Write(p []byte) (int, error) {
	if room := 4096 - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (c *capped) String() string { return string(c.b) }

// debouncer lets an action run at most once per interval: a request while
// the interval runs is kept pending and runs when it ends, so the last
// change is always followed by a run.
type debouncer struct {
	interval time.Duration
	last     time.Time
	pending  bool
}

// due reports whether the pending action runs now, and records the run.
func (d *debouncer) due(now time.Time) bool {
	if !d.pending || !d.last.IsZero() && now.Sub(d.last) < d.interval {
		return false
	}
	d.pending, d.last = false, now
	return true
}

// writeFileAtomic replaces path so that a reader sees the old content or the
// new, never a part: temp file in the same directory, fsync, rename,
// directory fsync.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	err = errors.Join(tmp.Chmod(perm), writeSync(tmp, data), tmp.Close())
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		os.Remove(name)
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

func writeSync(f *os.File, data []byte) error {
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Sync()
}

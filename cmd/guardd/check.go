package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/guardd/guardd/config"
	"github.com/guardd/guardd/pipeline"
)

func init() {
	register("check", "validate a configuration and the rules it loads, without starting", runCheck)
}

// runCheck is guardd's `nginx -t`: it decodes and validates the
// configuration, loads and compiles its rules and log format as `guardd run`
// would, and says what would run, without opening a listener, a state
// directory or a log.
func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	configPath := fs.String("config", defaultConfigPath, "configuration file (YAML)")
	pos, code, done := parseFlags(fs, `usage: guardd check [--config FILE]

Validates the configuration and the rules it loads, as 'guardd run' would
load them, without starting anything; exits 0 when they are good, 1 with the
file, line and field of the first error otherwise.`, args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) == 1 && *configPath == defaultConfigPath {
		*configPath = pos[0] // guardd check FILE
	} else if len(pos) > 0 {
		fmt.Fprintln(stderr, "guardd check: one configuration at a time: guardd check [--config] FILE")
		return 2
	}
	cfg, err := config.Load(*configPath)
	if err != nil {
		fmt.Fprintln(stderr, "guardd check:", err)
		return 1
	}
	p, err := pipeline.Build(cfg, pipeline.BuildOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Fprintf(stderr, "guardd check: %s: %v\n", *configPath, err)
		return 1
	}
	p.Release()
	var names []string
	for _, r := range p.Rules().Rules() {
		names = append(names, r.Name)
	}
	fmt.Fprintf(stdout, "%s: ok\n", *configPath)
	fmt.Fprintf(stdout, "rules: %d (%s)\n", len(names), strings.Join(names, ", "))
	fmt.Fprintf(stdout, "inputs: %s\n", strings.Join(cfg.Inputs(), "; "))
	fmt.Fprintf(stdout, "outputs: %s\n", strings.Join(cfg.Outputs(), "; "))
	if cfg.Fleet != nil {
		if per := perNodeRules(p.Rules().Rules()); len(per) > 0 {
			fmt.Fprintf(stdout, "fleet: counted on each node alone, not fleet-wide: %s (docs/fleet.md)\n", strings.Join(per, ", "))
		}
	}
	for _, path := range cfg.Sources.Nginx.Paths {
		if m, _ := filepath.Glob(path); len(m) == 0 {
			fmt.Fprintf(stdout, "warning: sources.nginx.paths: nothing matches %s yet (guardd waits for it)\n", path)
		}
	}
	for _, w := range cfg.Warnings() {
		fmt.Fprintln(stdout, "warning:", w)
	}
	return 0
}

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
	fmt.Fprintf(stdout, "inputs: %s\n", strings.Join(inputsOf(cfg), "; "))
	fmt.Fprintf(stdout, "outputs: %s\n", strings.Join(outputsOf(cfg), "; "))
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

// inputsOf lists what a daemon with cfg reads.
func inputsOf(cfg *config.Config) []string {
	var in []string
	if len(cfg.Sources.Nginx.Paths) > 0 {
		in = append(in, "nginx logs "+strings.Join(cfg.Sources.Nginx.Paths, ", "))
	} else {
		in = append(in, "no nginx logs (sources.nginx.paths is empty: guardd run refuses this)")
	}
	if len(cfg.Fingerprint.Interfaces) > 0 {
		in = append(in, "capture on "+strings.Join(cfg.Fingerprint.Interfaces, ", "))
	}
	return in
}

// outputsOf lists where a daemon with cfg enforces or publishes mitigations.
func outputsOf(cfg *config.Config) []string {
	out := []string{"decision API on " + or(cfg.Decision.Listen, config.DefaultDecisionListen), "admin API on " + or(cfg.Admin.Listen, config.DefaultAdminListen)}
	if cfg.CrowdSec.Listen != "" {
		out = append(out, "CrowdSec bouncer API on "+cfg.CrowdSec.Listen)
	}
	if cfg.Blocklist.Listen != "" {
		out = append(out, "blocklist feed on "+cfg.Blocklist.Listen)
	}
	if cfg.Blocklist.NginxGeo != nil {
		out = append(out, "nginx geo file")
	}
	if f := cfg.Fleet; f != nil {
		out = append(out, fmt.Sprintf("fleet-wide counts and mitigations through Redis (%s) at %s", or(f.Redis.Mode, "standalone"), strings.Join(f.Redis.Addresses, ", ")))
	}
	if pc, ok := cfg.NFTables(); ok {
		out = append(out, "nftables table "+or(pc.Table, "guardd"))
	}
	return out
}

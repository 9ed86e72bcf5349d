package main

import (
	"encoding/json"
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
	asJSON := fs.Bool("json", false, `print one JSON object: {"config","ok","error","rules","inputs","outputs","per_node_rules","warnings"}`)
	pos, code, done := parseFlags(fs, `usage: guardd check [--json] [--config FILE]

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
	res := checkJSON{Config: *configPath, Rules: []string{}}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "guardd check:", err)
		if *asJSON {
			res.Error = err.Error()
			writeJSONLine(stdout, res)
		}
		return 1
	}
	cfg, err := config.Load(*configPath)
	if err != nil {
		return fail(err)
	}
	p, err := pipeline.Build(cfg, pipeline.BuildOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return fail(fmt.Errorf("%s: %w", *configPath, err))
	}
	p.Release()
	var names []string
	for _, r := range p.Rules().Rules() {
		names = append(names, r.Name)
	}
	if *asJSON {
		res.OK, res.Inputs, res.Outputs, res.Warnings = true, cfg.Inputs(), cfg.Outputs(), cfg.Warnings()
		res.Rules = append(res.Rules, names...)
		if cfg.Fleet != nil {
			res.PerNodeRules = perNodeRules(p.Rules().Rules())
		}
		for _, path := range cfg.Sources.Nginx.Paths {
			if m, _ := filepath.Glob(path); len(m) == 0 {
				res.Warnings = append(res.Warnings, fmt.Sprintf("sources.nginx.paths: nothing matches %s yet (guardd waits for it)", path))
			}
		}
		writeJSONLine(stdout, res)
		return 0
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

// checkJSON is guardd check --json.
type checkJSON struct {
	Config       string   `json:"config"`
	OK           bool     `json:"ok"`
	Error        string   `json:"error,omitempty"`
	Rules        []string `json:"rules"`
	Inputs       []string `json:"inputs,omitempty"`
	Outputs      []string `json:"outputs,omitempty"`
	PerNodeRules []string `json:"per_node_rules,omitempty"`
	Warnings     []string `json:"warnings,omitempty"`
}

// writeJSONLine writes v as one line of JSON, with <, > and & as they are.
func writeJSONLine(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

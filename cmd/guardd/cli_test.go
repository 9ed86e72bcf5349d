package main

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

// verbs lists the subcommands that take a verb; the test asks each for -h.
var verbs = map[string][]string{
	"decisions": {"list", "add", "delete", "import", "export"},
	"rules":     {"check", "test"},
	"bouncers":  {"add", "list", "delete"},
	"keys":      {"show", "rotate"},
}

// TestHelpEverySubcommand: -h prints the command's own usage to stdout and
// exits 0, before anything reads a configuration or a token (the ones named
// here do not exist), for every registered command and verb.
func TestHelpEverySubcommand(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	for name := range commands {
		runs := [][]string{{name, "-h"}, {name, "--help"}}
		for _, v := range verbs[name] {
			runs = append(runs, []string{name, v, "-h"}, []string{name, v, "--config", "/nonexistent/guardd.yaml", "--help"})
		}
		for _, args := range runs {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				var out, errb bytes.Buffer
				if rc := dispatch(args, &out, &errb); rc != 0 || errb.Len() != 0 {
					t.Fatalf("exit %d, stderr %q", rc, errb.String())
				}
				if !strings.HasPrefix(out.String(), "usage: guardd "+name) {
					t.Errorf("stdout does not start with the usage of %s: %q", name, out.String())
				}
			})
		}
	}
	// Each decisions verb shows its own flags, not another verb's.
	for _, c := range []struct{ verb, has, lacks string }{
		{"list", "-json", "-scope"},
		{"add", "-scope", "-format"},
		{"delete", "-config", "-scope"},
		{"import", "-duration", "-scope"},
		{"export", "-format", "-duration"},
	} {
		var out, errb bytes.Buffer
		runDecisions([]string{c.verb, "-h"}, &out, &errb)
		if !strings.Contains(out.String(), c.has) || strings.Contains(out.String(), c.lacks) {
			t.Errorf("decisions %s -h: want %s and not %s in\n%s", c.verb, c.has, c.lacks, out.String())
		}
	}
}

func TestParseFlagsAnywhere(t *testing.T) {
	for _, c := range []struct {
		args []string
		pos  string
		cfg  string
	}{
		{[]string{"7", "--config", "x.yaml"}, "7", "x.yaml"},
		{[]string{"--config=x.yaml", "7", "8"}, "7 8", "x.yaml"},
		{[]string{"7", "--", "--config", "y"}, "7 --config y", ""},
	} {
		fs := newTestFlagSet()
		cfg := fs.String("config", "", "")
		pos, _, done := parseFlags(fs, "usage: x", c.args, &bytes.Buffer{}, &bytes.Buffer{})
		if done || strings.Join(pos, " ") != c.pos || *cfg != c.cfg {
			t.Errorf("%q: pos %q config %q done %v", c.args, pos, *cfg, done)
		}
	}
	var errb bytes.Buffer
	if _, rc, done := parseFlags(newTestFlagSet(), "usage: x", []string{"--nope"}, &bytes.Buffer{}, &errb); !done || rc != 2 || !strings.Contains(errb.String(), "usage: x") {
		t.Errorf("bad flag: rc %d done %v stderr %q", rc, done, errb.String())
	}
}

func newTestFlagSet() *flag.FlagSet { return flag.NewFlagSet("x", flag.ContinueOnError) }

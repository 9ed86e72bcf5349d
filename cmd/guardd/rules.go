package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/guardd/guardd/config"
	"github.com/guardd/guardd/rules"
	"github.com/guardd/guardd/rules/builtin"
)

func init() { register("rules", "check or test Rego rules", runRules) }

const rulesUsage = `usage: guardd rules check [--builtin] [--json] [DIR...]
       guardd rules test [--builtin] [--json] [DIR...]

check validates the rules (*.rego, not *_test.rego) under each DIR and prints
them; test runs their Rego unit tests (test_* rules, usually in *_test.rego)
as 'opa test' does. --builtin adds the library embedded in guardd; --config
FILE adds the rules that configuration loads. --json prints one JSON object
per rule (check) or per test (test) per line. 'guardd help rules' explains
how a rule is written.
`

// ruleSource is one place rules are read from: a directory or the built-in
// library.
type ruleSource struct {
	name string // as printed in messages: the directory, or "builtin"
	fsys fs.FS
}

func runRules(args []string, stdout, stderr io.Writer) int {
	verb, code, done := pickVerb(args, []string{"check", "test"}, rulesUsage, stdout, stderr)
	if done {
		return code
	}
	fl := flag.NewFlagSet("rules "+verb, flag.ContinueOnError)
	useBuiltin := fl.Bool("builtin", false, "include the rule library embedded in guardd")
	configPath := fl.String("config", "", "also take the rules a configuration loads: its rules.dirs, and the built-in library unless rules.disable_builtin")
	asJSON := fl.Bool("json", false, "print one JSON object per rule (check) or per test (test) per line")
	dirs, code, done := parseFlags(fl, strings.TrimRight(rulesUsage, "\n"), args[1:], stdout, stderr)
	if done {
		return code
	}
	if *configPath != "" {
		cfg, err := config.Load(*configPath)
		if err != nil {
			fmt.Fprintf(stderr, "guardd rules %s: %v\n", verb, err)
			return 1
		}
		dirs = append(dirs, cfg.Rules.Dirs...)
		*useBuiltin = *useBuiltin || !cfg.Rules.DisableBuiltin
	}
	var srcs []ruleSource
	if *useBuiltin {
		srcs = append(srcs, ruleSource{name: "builtin", fsys: builtin.FS})
	}
	for _, dir := range dirs {
		st, err := os.Stat(dir)
		if err != nil {
			fmt.Fprintf(stderr, "guardd rules %s: %v\n", verb, err)
			return 1
		}
		if !st.IsDir() {
			fmt.Fprintf(stderr, "guardd rules %s: %s is not a directory\n", verb, dir)
			return 1
		}
		srcs = append(srcs, ruleSource{name: dir, fsys: os.DirFS(dir)})
	}
	if len(srcs) == 0 {
		fmt.Fprint(stderr, rulesUsage)
		return 2
	}
	if verb == "check" {
		return rulesCheck(srcs, *asJSON, stdout, stderr)
	}
	return rulesTest(srcs, *asJSON, stdout, stderr)
}

// printRuleErrors prints err one located problem per line, with file names
// joined to the source they came from.
func printRuleErrors(w io.Writer, src ruleSource, err error) {
	var list []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	} else {
		list = []error{err}
	}
	for _, e := range list {
		var re *rules.Error
		if errors.As(e, &re) {
			re2 := *re
			re2.File = filepath.Join(src.name, re.File)
			fmt.Fprintln(w, re2.Error())
			continue
		}
		fmt.Fprintf(w, "%s: %v\n", src.name, e)
	}
}

func rulesCheck(srcs []ruleSource, asJSON bool, stdout, stderr io.Writer) int {
	opts := rules.Options{Logger: slog.New(slog.DiscardHandler)}
	var sets []*rules.Set
	var names []string // the source of each rule, in order
	failed := false
	for _, src := range srcs {
		s, err := rules.Load(src.fsys, opts)
		if err != nil {
			printRuleErrors(stderr, src, err)
			failed = true
			continue
		}
		sets = append(sets, s)
		for range s.Rules() {
			names = append(names, src.name)
		}
	}
	if failed {
		return 1
	}
	all, err := rules.Merge(sets...)
	if err != nil {
		fmt.Fprintf(stderr, "guardd rules check: %v\n", err)
		return 1
	}
	if asJSON {
		for i, r := range all.Rules() {
			writeJSONLine(stdout, ruleJSONOf(r, filepath.Join(names[i], r.File)))
		}
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	// COUNTED: "request" rules read only what is known when a request
	// arrives, and decision.count counts them when nginx asks; "log" rules
	// are counted from the access log line.
	fmt.Fprintln(tw, "RULE\tCHARACTERISTICS\tPERIOD\tLIMIT\tACTION\tTIMEOUT\tALGORITHM\tEVALUATION\tCOUNTED\tFILE")
	fallbacks := 0
	for i, r := range all.Rules() {
		var cs []string
		for _, c := range r.Characteristics {
			cs = append(cs, c.String())
		}
		limit := strconv.FormatFloat(r.Requests, 'f', -1, 64)
		if r.Score != nil {
			limit += " (score " + r.Score.String() + ")"
		}
		if r.Distinct != nil {
			limit += " distinct " + r.Distinct.String()
		}
		if g := r.Regularity; g != nil {
			limit += " regular (" + strconv.Itoa(g.MinEvents) + " events, cv<=" + strconv.FormatFloat(g.MaxCV, 'f', -1, 64) + ")"
		}
		for _, w := range r.Windows[min(1, len(r.Windows)):] {
			limit += ", " + strconv.FormatFloat(w.Requests, 'f', -1, 64) + "/" + w.Period.String()
		}
		eval := "native"
		if !r.Native {
			eval = "fallback"
			fallbacks++
		}
		counted := "log"
		if r.RequestTime {
			counted = "request"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, strings.Join(cs, ","), r.Period, limit,
			r.Action, r.MitigationTimeout, r.Algorithm, eval, counted, filepath.Join(names[i], r.File))
	}
	tw.Flush()
	for i, r := range all.Rules() {
		if !r.Native {
			fmt.Fprintf(stdout, "fallback %s (%s:%d): evaluated by OPA on every event: %s\n",
				r.Name, filepath.Join(names[i], r.File), r.Line, strings.Join(r.Fallback, "; "))
		}
	}
	fmt.Fprintf(stdout, "%d rules ok, %d native, %d fallback\n", len(all.Rules()), len(all.Rules())-fallbacks, fallbacks)
	return 0
}

// ruleJSON is one line of guardd rules check --json.
type ruleJSON struct {
	Rule                     string   `json:"rule"`
	Title                    string   `json:"title,omitempty"`
	Characteristics          []string `json:"characteristics"`
	PeriodSeconds            float64  `json:"period_seconds"`
	RequestsPerPeriod        float64  `json:"requests_per_period"`
	Action                   string   `json:"action"`
	MitigationTimeoutSeconds float64  `json:"mitigation_timeout_seconds"`
	Algorithm                string   `json:"algorithm"`
	Evaluation               string   `json:"evaluation"` // native or fallback
	Fallback                 []string `json:"fallback,omitempty"`
	Counted                  string   `json:"counted"` // log or request
	File                     string   `json:"file"`
	Line                     int      `json:"line"`
}

func ruleJSONOf(r *rules.Rule, file string) ruleJSON {
	j := ruleJSON{Rule: r.Name, Title: r.Title, Characteristics: []string{}, PeriodSeconds: r.Period.Seconds(), RequestsPerPeriod: r.Requests,
		Action: r.Action.String(), MitigationTimeoutSeconds: r.MitigationTimeout.Seconds(), Algorithm: r.Algorithm.String(),
		Evaluation: "native", Counted: "log", File: file, Line: r.Line}
	for _, c := range r.Characteristics {
		j.Characteristics = append(j.Characteristics, c.String())
	}
	if !r.Native {
		j.Evaluation, j.Fallback = "fallback", r.Fallback
	}
	if r.RequestTime {
		j.Counted = "request"
	}
	return j
}

// ruleTestJSON is one line of guardd rules test --json.
type ruleTestJSON struct {
	Test            string  `json:"test"`
	Result          string  `json:"result"` // pass, fail or skip
	File            string  `json:"file"`
	Line            int     `json:"line"`
	DurationSeconds float64 `json:"duration_seconds"`
	Error           string  `json:"error,omitempty"`
}

func rulesTest(srcs []ruleSource, asJSON bool, stdout, stderr io.Writer) int {
	passed, failed, skipped := 0, 0, 0
	status := 0
	for _, src := range srcs {
		res, err := rules.Test(src.fsys)
		if err != nil {
			printRuleErrors(stderr, src, err)
			status = 1
			continue
		}
		for _, r := range res {
			name := strings.TrimPrefix(r.Package, "data.") + "." + r.Name
			loc := filepath.Join(src.name, r.File) + ":" + strconv.Itoa(r.Line)
			if asJSON {
				j := ruleTestJSON{Test: name, Result: "pass", File: filepath.Join(src.name, r.File), Line: r.Line, DurationSeconds: r.Duration.Seconds()}
				switch {
				case r.Skip:
					j.Result = "skip"
				case !r.Pass:
					j.Result, status = "fail", 1
					if r.Err != nil {
						j.Error = r.Err.Error()
					}
				}
				writeJSONLine(stdout, j)
				continue
			}
			switch {
			case r.Skip:
				skipped++
				fmt.Fprintf(stdout, "SKIP: %s (%s)\n", name, loc)
			case r.Pass:
				passed++
				fmt.Fprintf(stdout, "PASS: %s (%s)\n", name, r.Duration)
			default:
				failed++
				status = 1
				if r.Err != nil {
					fmt.Fprintf(stdout, "FAIL: %s (%s): %v\n", name, loc, r.Err)
				} else {
					fmt.Fprintf(stdout, "FAIL: %s (%s)\n", name, loc)
				}
			}
		}
	}
	if asJSON {
		return status
	}
	fmt.Fprintln(stdout, strings.Repeat("-", 72))
	if skipped > 0 {
		fmt.Fprintf(stdout, "%d passed, %d failed, %d skipped\n", passed, failed, skipped)
	} else {
		fmt.Fprintf(stdout, "%d passed, %d failed\n", passed, failed)
	}
	return status
}

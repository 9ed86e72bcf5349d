package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/guardd/guardd/config"
	"github.com/guardd/guardd/ingest/sniff"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/throttle"
	"github.com/guardd/guardd/pipeline"
	"github.com/guardd/guardd/pipeline/replay"
	"github.com/guardd/guardd/report"
)

func init() {
	register("replay", "run the rules over access logs offline and print the mitigations they would make", runReplay)
}

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// replayFlags are guardd replay's flags.
type replayFlags struct {
	configPath, format, mmdb, progress, htmlOut *string
	asJSON, clients, logJSON, noBuiltin         *bool
	workers                                     *int
	ruleDirs, pcaps                             stringList
}

const replaySynopsis = "usage: guardd replay [--config FILE] [--json] [--pcap CAPTURE] [flags] LOG...\n\nLogs may be plain, gzip or zstd; give them oldest first. A LOG of - is standard input."

func newReplayFlags(fs *flag.FlagSet) *replayFlags {
	f := &replayFlags{
		configPath: fs.String("config", "", "configuration file (YAML)"),
		asJSON:     fs.Bool("json", false, "print one JSON object per mitigation per line"),
		clients:    fs.Bool("clients", false, "with --json: print the impact on each client address instead of the mitigations"),
		format:     fs.String("format", "", `nginx log_format: "combined", a format string, or a pasted log_format directive (overrides the config)`),
		logJSON:    fs.Bool("log-json", false, "logs are JSON objects keyed by nginx variable names"),
		noBuiltin:  fs.Bool("no-builtin", false, "leave out the built-in rule library"),
		mmdb:       fs.String("mmdb", "", "MaxMind database (.mmdb) for ip.src.asnum and ip.src.country"),
		workers:    fs.Int("workers", 0, "parallel workers (default: all cores)"),
		progress:   fs.String("progress", "auto", "progress bar: auto (on a terminal), always or never"),
		htmlOut:    fs.String("html", "", "also write a self-contained HTML report to this file: requests and trips over time per rule, the most mitigated keys, how close benign-looking keys came to each limit"),
	}
	fs.Var(&f.ruleDirs, "rules", "directory of Rego rules (repeatable)")
	fs.Var(&f.pcaps, "pcap", "capture (pcap or pcapng) of the same traffic: its TLS and HTTP fingerprints are joined to log lines by client address and port (repeatable)")
	return f
}

func runReplay(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	f := newReplayFlags(fs)
	logs, code, done := parseFlags(fs, replaySynopsis, args, stdout, stderr)
	if done {
		return code
	}
	if len(logs) == 0 {
		printUsage(fs, replaySynopsis, stderr)
		return 2
	}
	if i := slices.Index(logs, "-"); i >= 0 && slices.Contains(logs[i+1:], "-") {
		fmt.Fprintln(stderr, "guardd replay: - (standard input) given twice; it can be read once")
		return 2
	}
	cfg, err := f.config()
	if err != nil {
		fmt.Fprintln(stderr, "guardd replay:", err)
		return 1
	}
	if *f.clients && !*f.asJSON {
		fmt.Fprintln(stderr, "guardd replay: --clients needs --json")
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rc, rec, err := f.setup(cfg, logger, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "guardd replay:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	st, err := replay.Run(ctx, rc, logs)
	if err != nil {
		fmt.Fprintln(stderr, "guardd replay:", err)
		return 1
	}
	return f.write(rc.Report, rec, st, logs, stdout, stderr)
}

// config is the configuration file with the flags' overrides, validated.
func (f *replayFlags) config() (*config.Config, error) {
	cfg, err := config.Load(*f.configPath)
	if err != nil {
		return nil, err
	}
	if *f.format != "" {
		cfg.Log.Format = *f.format
	}
	if *f.logJSON {
		cfg.Log.JSON = true
	}
	if *f.noBuiltin {
		cfg.Rules.DisableBuiltin = true
	}
	cfg.Rules.Dirs = append(cfg.Rules.Dirs, f.ruleDirs...)
	if *f.mmdb != "" {
		cfg.Characteristics.ASNDatabase, cfg.Characteristics.CountryDatabase = *f.mmdb, *f.mmdb
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// setup builds the replay: the pipeline, the throttle rules replayed with
// the decision API's limiter, the captures' fingerprints to join, the
// progress bar and the HTML report's recorder (nil without --html).
func (f *replayFlags) setup(cfg *config.Config, logger *slog.Logger, stderr io.Writer) (replay.Config, *report.Recorder, error) {
	p, err := pipeline.Build(cfg, pipeline.BuildOptions{Logger: logger})
	if err != nil {
		return replay.Config{}, nil, err
	}
	rep := pipeline.NewReport(*f.clients || *f.htmlOut != "") // the HTML report's summary counts clients
	// Throttle rules are replayed with the decision API's limiter, on the
	// lines' own time; concurrency rules and shedding cannot be.
	lim, err := throttle.New(throttle.Config{MaxKeys: cfg.Counting.MaxKeys, Shadow: cfg.Decision.ThrottleShadow})
	if err == nil {
		var limits *throttle.Rules
		if limits, err = lim.Build(p.Rules()); err == nil {
			rep.SimulateThrottle(limits)
			for _, name := range limits.Concurrency() {
				fmt.Fprintf(stderr, "guardd replay: throttle rule %s limits requests in flight, which a log does not tell: not replayed\n", name)
			}
		}
	}
	if err != nil {
		p.Release()
		return replay.Config{}, nil, err
	}
	rc := replay.Config{Pipeline: p, Report: rep, Workers: *f.workers, Logger: logger}
	if len(f.pcaps) > 0 {
		// The whole capture is read before the logs, so entries must live as
		// long as the capture spans.
		join := sniff.NewJoin(24*time.Hour, 1<<22)
		n := 0
		if err := sniff.ReadFiles(f.pcaps, sniff.Config{DisableJA4H: cfg.Fingerprint.DisableJA4H}, func(r *sniff.Record) {
			join.Put(r)
			n++
		}); err != nil {
			p.Release()
			return replay.Config{}, nil, err
		}
		fmt.Fprintf(stderr, "guardd replay: %d fingerprints from %d captures to join\n", n, len(f.pcaps))
		rc.Join = join
	}
	if *f.progress == "always" || (*f.progress == "auto" && isTerminal(stderr)) {
		bar := &progressBar{w: stderr}
		rc.Progress = bar.update
	}
	var rec *report.Recorder
	if *f.htmlOut != "" {
		rec = report.NewRecorder(p.Engine().Rules())
		p.Engine().SetOnCount(rec.Count)
	}
	return rc, rec, nil
}

// write prints what the replay found: the HTML report, the mitigations
// (or the clients) on stdout, the summary and warnings on stderr. It
// returns the exit status.
func (f *replayFlags) write(rep *pipeline.Report, rec *report.Recorder, st replay.Stats, logs []string, stdout, stderr io.Writer) int {
	ms := rep.Mitigations()
	if rec != nil {
		if err := writeReplayHTML(*f.htmlOut, rec, ms, rep.Throttled(), rep.Clients(), st, logs); err != nil {
			fmt.Fprintln(stderr, "guardd replay:", err)
			return 1
		}
		fmt.Fprintf(stderr, "guardd replay: wrote the report to %s\n", *f.htmlOut)
	}
	out := bufio.NewWriter(stdout)
	switch {
	case *f.clients:
		writeClientsJSON(out, rep.Clients())
	case *f.asJSON:
		writeMitigationsJSON(out, ms)
	default:
		writeMitigationsTable(out, ms)
	}
	out.Flush()
	rate := float64(st.Lines) / st.Elapsed.Seconds()
	fmt.Fprintf(stderr, "guardd replay: %d lines (%d malformed) in %.2fs, %.0f lines/s; %d mitigations over %d requests; event time %s to %s\n",
		st.Lines, st.Malformed, st.Elapsed.Seconds(), rate, len(ms), st.Mitigated, fmtTime(st.First), fmtTime(st.Last))
	writeMalformedWarning(stderr, st.Lines, st.Malformed, st.Errors)
	writeThrottledSummary(stderr, rep.Throttled())
	if st.Future > 0 {
		fmt.Fprintf(stderr, "guardd replay: %d events dated more than %s ahead of the clock were counted at the clock's time\n", st.Future, pipeline.DefaultFutureTolerance)
	}
	for _, err := range st.FileErrors {
		fmt.Fprintln(stderr, "guardd replay:", err, "(the rest of that file was skipped; the other files were replayed)")
	}
	if len(st.FileErrors) > 0 {
		return 1
	}
	return 0
}

// malformedWarnPercent is the share of malformed lines above which replay
// says so plainly: a few lines cut by a rotation are normal, more means the
// format does not fit the file.
const malformedWarnPercent = 2

// writeMalformedWarning tells when more than malformedWarnPercent of the
// lines were malformed, showing the first with its file and line.
func writeMalformedWarning(w io.Writer, lines, malformed int64, errs []error) {
	if lines == 0 || malformed*100 <= malformedWarnPercent*lines {
		return
	}
	fmt.Fprintf(w, "guardd replay: warning: %d of %d lines (%.1f%%) are malformed and were skipped; does the log format match the files?\n",
		malformed, lines, 100*float64(malformed)/float64(lines))
	if len(errs) > 0 {
		fmt.Fprintf(w, "guardd replay: first malformed line: %v\n", errs[0])
	}
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

type mitigationJSON struct {
	Rule      string           `json:"rule"`
	Action    string           `json:"action"`
	Scope     mitigation.Scope `json:"scope"` // in the rule's characteristic order
	FirstSeen string           `json:"first_seen"`
	LastSeen  string           `json:"last_seen"`
	Count     int64            `json:"count"`
	Trips     int64            `json:"trips"`
	Expires   string           `json:"expires"`
}

func writeReplayHTML(path string, rec *report.Recorder, ms []pipeline.Mitigation, throttled []pipeline.Throttled, clients []pipeline.Client, st replay.Stats, logs []string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	info := report.Info{Files: logs, Lines: st.Lines, Malformed: st.Malformed, Mitigated: st.Mitigated,
		First: st.First, Last: st.Last, Elapsed: st.Elapsed, Generated: time.Now(), Throttled: throttled, Clients: clients}
	if err := report.WriteReplayHTML(f, rec.Report(info, ms, 10)); err != nil {
		f.Close()
		return fmt.Errorf("html report: %w", err)
	}
	return f.Close()
}

func writeMitigationsJSON(w io.Writer, ms []pipeline.Mitigation) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, m := range ms {
		enc.Encode(mitigationJSON{
			Rule: m.Rule, Action: m.Action.String(), Scope: m.Scope,
			FirstSeen: fmtTime(m.FirstSeen), LastSeen: fmtTime(m.LastSeen),
			Count: m.Count, Trips: m.Trips, Expires: fmtTime(m.Expires),
		})
	}
}

// clientJSON is one line of `guardd replay --json --clients` (DESIGN.md).
type clientJSON struct {
	Addr      string           `json:"ip.src"`
	Requests  int64            `json:"requests"`
	Actioned  int64            `json:"actioned"`
	Actions   map[string]int64 `json:"actions"`
	Rules     []string         `json:"rules"`
	Mitigated bool             `json:"mitigated"`
	// Shadow: per shadow throttle rule, the requests it would have refused.
	Shadow map[string]int64 `json:"shadow,omitempty"`
}

// writeThrottledSummary prints, on stderr whatever the output, one line per
// throttle rule replayed: stdout keeps one mitigation (or client) per line.
func writeThrottledSummary(w io.Writer, ts []pipeline.Throttled) {
	for _, t := range ts {
		verb := "refused"
		if t.Shadow {
			verb = "would have refused (shadow)"
		}
		fmt.Fprintf(w, "guardd replay: throttle rule %s counted %d requests, %s %d from %d clients\n", t.Rule, t.Counted, verb, t.Refused, t.Clients)
	}
}

func writeClientsJSON(w io.Writer, cs []pipeline.Client) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, c := range cs {
		o := clientJSON{Addr: c.Addr.String(), Requests: c.Requests, Actioned: c.Actioned, Actions: map[string]int64{}, Rules: c.Rules, Mitigated: c.Mitigated, Shadow: c.Shadow}
		for a, n := range c.Actions {
			o.Actions[a.String()] = n
		}
		if o.Rules == nil {
			o.Rules = []string{}
		}
		enc.Encode(o)
	}
}

func writeMitigationsTable(w io.Writer, ms []pipeline.Mitigation) {
	if len(ms) == 0 {
		fmt.Fprintln(w, "no mitigations")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tACTION\tSCOPE\tCOUNT\tFIRST SEEN\tLAST SEEN")
	for _, m := range ms {
		var sc []string
		for _, f := range m.Scope {
			sc = append(sc, f.Name+"="+f.Value)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", m.Rule, m.Action, strings.Join(sc, " "), m.Count, fmtTime(m.FirstSeen), fmtTime(m.LastSeen))
	}
	tw.Flush()
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progressBar draws one line on a terminal.
type progressBar struct {
	w    io.Writer
	last int
}

func (b *progressBar) update(p replay.Progress) {
	const width = 30
	frac := 0.0
	if p.Files > 0 {
		frac = float64(p.FileIndex) / float64(p.Files)
	}
	if p.Done {
		frac = 1
	}
	fill := int(frac * width)
	rate := float64(p.Lines) / max(p.Elapsed.Seconds(), 1e-9)
	line := fmt.Sprintf("\r[%s%s] file %d/%d  %d lines  %.0f lines/s  %d malformed",
		strings.Repeat("=", fill), strings.Repeat(" ", width-fill), min(p.FileIndex+1, p.Files), p.Files, p.Lines, rate, p.Malformed)
	pad := max(b.last-len(line), 0)
	b.last = len(line)
	fmt.Fprint(b.w, line+strings.Repeat(" ", pad))
	if p.Done {
		fmt.Fprintln(b.w)
	}
}

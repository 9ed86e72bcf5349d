package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"text/tabwriter"
	"time"

	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/pipeline"
)

func init() {
	register("explain", "say why a client is mitigated, or how close it is to each rule's limit", runExplain)
}

// explain is the daemon's side of guardd explain.
func (d *daemon) explain(addr netip.Addr) any {
	allow, err := d.cfg.Load().Allowlist()
	if err != nil {
		allow = mitigation.Allowlist{} // one that does not load allowlists nothing here
	}
	now := time.Now()
	return d.pipes.Load().Explain(addr, d.store.List(now), allow, now)
}

func runExplain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	client := adminFlags(fs)
	asJSON := fs.Bool("json", false, "print the daemon's answer as JSON")
	pos, code, done := parseFlags(fs, `usage: guardd explain [--json] [flags] ADDRESS

Asks the running daemon why ADDRESS is mitigated (the active mitigations on it
or on a prefix holding it), and how close it is to each rule's limit right
now: the count in the current window, the limit and the period.`, args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "usage: guardd explain [flags] ADDRESS")
		return 2
	}
	addr, err := netip.ParseAddr(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "guardd explain: %q: want an IPv4 or IPv6 address\n", pos[0])
		return 2
	}
	a, err := client()
	if err != nil {
		fmt.Fprintln(stderr, "guardd explain:", err)
		return 1
	}
	var raw json.RawMessage
	if err := a.Do("GET", "/v1/explain/"+addr.String(), nil, &raw); err != nil {
		fmt.Fprintln(stderr, "guardd explain:", err)
		return 1
	}
	if *asJSON {
		var b bytes.Buffer
		json.Compact(&b, raw)
		fmt.Fprintln(stdout, b.String())
		return 0
	}
	var ex pipeline.Explanation
	if err := json.Unmarshal(raw, &ex); err != nil {
		fmt.Fprintln(stderr, "guardd explain:", err)
		return 1
	}
	writeExplain(stdout, ex)
	return 0
}

func writeExplain(w io.Writer, ex pipeline.Explanation) {
	switch {
	case ex.Allowlisted:
		fmt.Fprintf(w, "%s is allowlisted: never mitigated.\n", ex.Address)
	case len(ex.Mitigations) == 0:
		fmt.Fprintf(w, "%s is not mitigated.\n", ex.Address)
	default:
		fmt.Fprintf(w, "%s is mitigated:\n", ex.Address)
		for _, m := range ex.Mitigations {
			fmt.Fprintf(w, "  %s by %s (id %d, %s) on %s, until %s (%s left)\n", m.Action, m.Rule, m.ID, m.Origin, m.Scope,
				m.Expires.UTC().Format(time.RFC3339), m.Expires.Sub(ex.Time).Round(time.Second))
		}
	}
	if ex.AnomalyScore > 0.005 {
		fmt.Fprintf(w, "\nits anomaly score now: %.2f, from", ex.AnomalyScore)
		for i, c := range ex.ScoreReasons {
			sep := ","
			if i == 0 {
				sep = ""
			}
			fmt.Fprintf(w, "%s %s %.2f", sep, c.Rule, c.Points)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "\nits counts now, per rule:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tACTION\tCOUNT\tLIMIT\tPERIOD\tOF LIMIT\t")
	for _, r := range ex.Rules {
		if r.Note != "" {
			fmt.Fprintf(tw, "%s\t%s\t-\t%g\t%s\t%s\t\n", r.Rule, r.Action, r.Limit, time.Duration(r.PeriodSeconds*float64(time.Second)), r.Note)
			continue
		}
		over := ""
		if r.Exceeded {
			over = " (over)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%g\t%s\t%.0f%%%s\t\n", r.Rule, r.Action, r.Count, r.Limit, time.Duration(r.PeriodSeconds*float64(time.Second)), r.Ratio*100, over)
	}
	tw.Flush()
}

// deleted resets the count of the rule that made m for m's key, when an
// operator deletes m: the rule trips again only if the client goes over the
// limit anew, and the log says so.
func (d *daemon) deleted(m mitigation.Mitigation) {
	switch found, reset := d.pipes.Load().Forget(m); {
	case !found:
	case reset:
		d.log.Info("rule count reset for a deleted mitigation: it trips again only over the limit anew", "rule", m.Rule, "scope", m.Scope.String())
	default:
		d.log.Warn("deleted mitigation's rule keeps its count (fleet-wide or multi-window counter): it may trip again at once", "rule", m.Rule, "scope", m.Scope.String())
	}
}

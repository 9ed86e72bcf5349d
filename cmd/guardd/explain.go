package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/counting"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/rules/engine"
)

func init() {
	register("explain", "say why a client is mitigated, or how close it is to each rule's limit", runExplain)
}

// explainJSON is GET /v1/explain/{addr}.
type explainJSON struct {
	Address     string                  `json:"address"`
	Allowlisted bool                    `json:"allowlisted"`
	Mitigations []mitigation.Mitigation `json:"mitigations"` // active, on the address or a prefix holding it
	Rules       []ruleStateJSON         `json:"rules"`
	Time        time.Time               `json:"time"`
}

// ruleStateJSON is one rule's count for the client right now.
type ruleStateJSON struct {
	Rule          string           `json:"rule"`
	Action        string           `json:"action"`
	Scope         mitigation.Scope `json:"scope,omitempty"`
	Count         float64          `json:"count"`
	Limit         float64          `json:"limit"`
	PeriodSeconds float64          `json:"period_seconds"`
	Ratio         float64          `json:"ratio"`
	Exceeded      bool             `json:"exceeded"`
	Note          string           `json:"note,omitempty"` // why there is no count
}

// explain is the daemon's side of guardd explain.
func (d *daemon) explain(addr netip.Addr) any {
	now := time.Now()
	out := explainJSON{Address: addr.String(), Mitigations: []mitigation.Mitigation{}, Rules: []ruleStateJSON{}, Time: now.UTC()}
	cfg := d.cfg.Load()
	if allow, err := cfg.Allowlist(); err == nil {
		out.Allowlisted = allow.Allows(mitigation.Scope{{Name: "ip.src", Value: addr.String()}})
	}
	for _, m := range d.store.List(now) {
		for _, p := range m.Scope {
			if covers(p, addr) {
				out.Mitigations = append(out.Mitigations, m)
				break
			}
		}
	}
	p := d.pipes.Load()
	ev := characteristics.Event{IP: addr, Time: now}
	p.Enrich(&ev)
	eng := p.Engine()
	var buf []byte
	for i, rl := range eng.Rules() {
		st := ruleStateJSON{Rule: rl.Name, Action: rl.Action.String(), Limit: rl.Requests, PeriodSeconds: rl.Period.Seconds()}
		key, vals, ok := eng.Key(i, &ev, buf[:0])
		buf = vals
		if !ok {
			var names []string
			for _, c := range rl.Characteristics {
				names = append(names, c.String())
			}
			st.Note = "keyed on " + strings.Join(names, ", ") + ": not known from the address alone"
			out.Rules = append(out.Rules, st)
			continue
		}
		st.Scope = mitigation.Scope(engine.ScopeOf(rl, vals))
		res, ok := eng.Peek(i, key, now)
		if !ok {
			st.Note = "its counter (fleet-wide or several windows) cannot be read without counting"
		} else {
			st.Count, st.Exceeded = res.Count, res.Exceeded
			if rl.Requests > 0 {
				st.Ratio = res.Count / rl.Requests
			}
		}
		out.Rules = append(out.Rules, st)
	}
	return out
}

// covers reports whether the scope pair p (ip.src or ip.src.prefix) holds
// addr.
func covers(p mitigation.Pair, addr netip.Addr) bool {
	n, ok := mitigation.Network(p)
	return ok && n.Contains(addr.Unmap().WithZone(""))
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
	if err := a.do("GET", "/v1/explain/"+addr.String(), nil, &raw); err != nil {
		fmt.Fprintln(stderr, "guardd explain:", err)
		return 1
	}
	if *asJSON {
		var b bytes.Buffer
		json.Compact(&b, raw)
		fmt.Fprintln(stdout, b.String())
		return 0
	}
	var ex explainJSON
	if err := json.Unmarshal(raw, &ex); err != nil {
		fmt.Fprintln(stderr, "guardd explain:", err)
		return 1
	}
	writeExplain(stdout, ex)
	return 0
}

func writeExplain(w io.Writer, ex explainJSON) {
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
	if m.Origin != mitigation.OriginRule {
		return
	}
	eng := d.pipes.Load().Engine()
	for i, rl := range eng.Rules() {
		if rl.Name != m.Rule || len(rl.Characteristics) != len(m.Scope) {
			continue
		}
		var vals []byte
		for _, p := range m.Scope {
			vals = append(append(vals, p.Value...), 0xff)
		}
		if eng.Forget(i, counting.Hash(vals)) {
			d.log.Info("rule count reset for a deleted mitigation: it trips again only over the limit anew", "rule", m.Rule, "scope", m.Scope.String())
		} else {
			d.log.Warn("deleted mitigation's rule keeps its count (fleet-wide or multi-window counter): it may trip again at once", "rule", m.Rule, "scope", m.Scope.String())
		}
		return
	}
}

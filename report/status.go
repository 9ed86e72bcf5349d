package report

import (
	"cmp"
	"html/template"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/guardd/guardd/mitigation"
)

// Status is what the live status page shows.
type Status struct {
	Generated time.Time
	Uptime    time.Duration
	Rules     int
	Active    int     // active mitigations
	ByRule    []Count // active mitigations per rule and action, most first
	ByAction  []Count // per action
	Decisions float64 // decision API requests per second, over the last interval
	Interval  time.Duration
	P50, P99  float64 // decision latency, seconds (from the histogram)
	TailLag   float64 // seconds behind the newest log line; -1 before the first
	LastEvent time.Time
	Fleet     string // "" when standalone; else a one-line fleet state
	Refresh   int    // seconds between reloads of the page; 0: none
	// Answered is the decision API's answers per outcome (block,
	// challenge, ...; allow left out), per second over the interval.
	Answered []Rate
	// Challenge is the challenge pages shown and passed since the start;
	// nil when this daemon has no challenge metrics.
	Challenge *ChallengeStats
	Keys      []KeyKind // active mitigations by the kind of key they act on
}

// Rate is an outcome's answers per second over the interval, and since the
// start.
type Rate struct {
	Outcome   string
	PerSecond float64
	Total     float64
}

// ChallengeStats are the challenge counters since the start.
type ChallengeStats struct{ Shown, Passed float64 }

// SolveRate is Passed over Shown, or -1 before any was shown.
func (c *ChallengeStats) SolveRate() float64 {
	if c.Shown <= 0 {
		return -1
	}
	return c.Passed / c.Shown
}

// KeyKind counts the active mitigations whose scope is one set of
// characteristics ("ip.src", "ip.src.prefix", "tls.ja4 http.user_agent").
type KeyKind struct {
	Kind string
	N    int
}

// KeyKinds counts ms by the characteristics of their scope, most first.
// The status page is served without the token, so it shows what kinds of
// keys are acted on, never their values.
func KeyKinds(ms []mitigation.Mitigation) []KeyKind {
	per := map[string]int{}
	for _, m := range ms {
		var b strings.Builder
		for i, p := range m.Scope {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(p.Name)
		}
		per[b.String()]++
	}
	out := make([]KeyKind, 0, len(per))
	for k, n := range per {
		out = append(out, KeyKind{k, n})
	}
	slices.SortFunc(out, func(a, b KeyKind) int { return cmp.Or(cmp.Compare(b.N, a.N), cmp.Compare(a.Kind, b.Kind)) })
	return out
}

// ActedBy is ByAction with block and challenge always present, strongest
// action first: the summary's cards.
func (s *Status) ActedBy() []Count {
	out := slices.Clone(s.ByAction)
	for _, a := range []string{mitigation.ActionBlock.String(), mitigation.ActionChallenge.String()} {
		if !slices.ContainsFunc(out, func(c Count) bool { return c.Action == a }) {
			out = append(out, Count{Action: a})
		}
	}
	slices.SortFunc(out, func(a, b Count) int {
		return cmp.Or(cmp.Compare(rankOf(b.Action), rankOf(a.Action)), cmp.Compare(a.Action, b.Action))
	})
	return out
}

// Count is a number of mitigations for a rule and action (Rule is empty in
// per-action counts).
type Count struct {
	Rule, Action string
	N            int
}

var statusTmpl = template.Must(template.New("status").Funcs(funcs).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="` + csp + `">
{{if .Refresh}}<meta http-equiv="refresh" content="{{.Refresh}}">{{end}}
<title>guardd status</title><style>` + style + `</style></head><body>
<h1>guardd status</h1>
<p class="muted">{{ts .Generated}} UTC; up {{dur .Uptime}}; {{.Rules}} rules; {{if .Fleet}}fleet: {{.Fleet}}{{else}}standalone (no fleet){{end}}.</p>
<h2 id="summary">Summary</h2>
<p class="muted">Active mitigations by action: each is a client address, network or other key acted on now.</p>
{{range .ActedBy}}<div class="card"><div class="big" id="acted-{{.Action}}">{{.N}}</div>{{verb .Action}}</div>
{{end}}<div class="card"><div class="big" id="solve">{{with .Challenge}}{{if lt .SolveRate 0.0}}–{{else}}{{pct .SolveRate}}{{end}}{{else}}–{{end}}</div>challenges solved{{with .Challenge}} ({{printf "%.0f" .Passed}} of {{printf "%.0f" .Shown}} shown){{else}} <span class="muted">(not measured: no guardd_challenge_shown_total metric)</span>{{end}}</div>
{{if .Answered}}<h3>Requests answered in the application's place (last {{dur .Interval}})</h3>
<table><tr><th>outcome</th><th class="num">per second</th><th class="num">since start</th><th></th></tr>{{$m := maxRate .Answered}}
{{range .Answered}}<tr><td>{{.Outcome}}</td><td class="num">{{printf "%.1f" .PerSecond}}</td><td class="num">{{printf "%.0f" .Total}}</td><td>{{hbar .Total $m 0 colorActed}}</td></tr>
{{end}}</table>{{end}}
<h3>Rules that acted: active mitigations by rule and action</h3>
{{if .ByRule}}<table><tr><th>rule</th><th>action</th><th class="num">mitigations</th><th></th></tr>{{$m := maxCount .ByRule}}{{range .ByRule}}<tr><td>{{.Rule}}</td><td>{{.Action}}</td><td class="num">{{.N}}</td><td>{{hbar (float .N) (float $m) 0 colorAct}}</td></tr>
{{end}}</table>{{else}}<p>None now.</p>{{end}}
{{if .Keys}}<h3>Keys acted on, by kind</h3>
<table><tr><th>key</th><th class="num">active mitigations</th></tr>
{{range .Keys}}<tr><td><code>{{.Kind}}</code></td><td class="num">{{.N}}</td></tr>
{{end}}</table><p class="muted">This page is served without the token, so it names no address or other value: <code>guardd decisions list</code> and <code>guardd explain</code> do.</p>{{end}}

<h2>Decisions and the log tail</h2>
<div class="card"><div class="big" id="active">{{.Active}}</div>active mitigations</div>
<div class="card"><div class="big" id="rate">{{printf "%.0f" .Decisions}}/s</div>decisions (last {{dur .Interval}})</div>
<div class="card"><div class="big" id="latency">{{ms .P50}}</div>decision latency p50 (p99 {{ms .P99}})</div>
<div class="card"><div class="big" id="lag">{{if lt .TailLag 0.0}}–{{else}}{{secs .TailLag}}{{end}}</div>tail lag{{if not .LastEvent.IsZero}} (newest line {{ts .LastEvent}}){{end}}</div>

<h2>Active mitigations by action</h2>
{{if .ByAction}}<table>{{$m := maxCount .ByAction}}{{range .ByAction}}<tr><td>{{.Action}}</td><td class="num">{{.N}}</td><td>{{hbar (float .N) (float $m) 0 colorAct}}</td></tr>
{{end}}</table>{{else}}<p>None.</p>{{end}}
</body></html>
`))

// WriteStatusHTML writes the status page.
func WriteStatusHTML(w io.Writer, s *Status) error {
	return statusTmpl.Execute(w, s)
}

// Counts counts the mitigations ms per rule and action and per action, each
// list ordered most first, then by rule and action, for Status.ByRule and
// Status.ByAction.
func Counts(ms []mitigation.Mitigation) (byRule, byAction []Count) {
	perRule, perAction := map[[2]string]int{}, map[string]int{}
	for _, m := range ms {
		perRule[[2]string{m.Rule, m.Action.String()}]++
		perAction[m.Action.String()]++
	}
	for k, n := range perRule {
		byRule = append(byRule, Count{Rule: k[0], Action: k[1], N: n})
	}
	for a, n := range perAction {
		byAction = append(byAction, Count{Action: a, N: n})
	}
	order := func(a, b Count) int {
		return cmp.Or(cmp.Compare(b.N, a.N), cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Action, b.Action))
	}
	slices.SortFunc(byRule, order)
	slices.SortFunc(byAction, order)
	return byRule, byAction
}

// Quantile estimates the q-quantile of n observations from a histogram's
// upper bounds and cumulative bucket counts, linearly within the bucket,
// as Prometheus' histogram_quantile does. It is 0 for an empty histogram.
func Quantile(bounds, cum []float64, n, q float64) float64 {
	if n <= 0 || len(bounds) == 0 {
		return 0
	}
	rank := q * n
	lower, below := 0.0, 0.0
	for i, ub := range bounds {
		if cum[i] >= rank {
			in := cum[i] - below
			if in <= 0 {
				return ub
			}
			return lower + (ub-lower)*(rank-below)/in
		}
		lower, below = ub, cum[i]
	}
	return bounds[len(bounds)-1]
}

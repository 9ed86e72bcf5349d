package report

import (
	"cmp"
	"html/template"
	"io"
	"slices"
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
<div class="card"><div class="big" id="active">{{.Active}}</div>active mitigations</div>
<div class="card"><div class="big" id="rate">{{printf "%.0f" .Decisions}}/s</div>decisions (last {{dur .Interval}})</div>
<div class="card"><div class="big" id="latency">{{ms .P50}}</div>decision latency p50 (p99 {{ms .P99}})</div>
<div class="card"><div class="big" id="lag">{{if lt .TailLag 0.0}}–{{else}}{{secs .TailLag}}{{end}}</div>tail lag{{if not .LastEvent.IsZero}} (newest line {{ts .LastEvent}}){{end}}</div>

<h2>Active mitigations by action</h2>
{{if .ByAction}}<table>{{$m := maxCount .ByAction}}{{range .ByAction}}<tr><td>{{.Action}}</td><td class="num">{{.N}}</td><td>{{hbar (float .N) (float $m) 0 colorAct}}</td></tr>
{{end}}</table>{{else}}<p>None.</p>{{end}}
<h2>Active mitigations by rule and action</h2>
{{if .ByRule}}<table><tr><th>rule</th><th>action</th><th class="num">mitigations</th><th></th></tr>{{$m := maxCount .ByRule}}{{range .ByRule}}<tr><td>{{.Rule}}</td><td>{{.Action}}</td><td class="num">{{.N}}</td><td>{{hbar (float .N) (float $m) 0 colorAct}}</td></tr>
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

package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
	"time"
)

// Colours of the charts; the Chromium test looks for them in screenshots.
const (
	ColorCounted = "#3b6fd4" // requests a rule counted
	ColorTrips   = "#d43b3b" // counts over the limit
	ColorNear    = "#e69a28" // how close a benign key came to the limit
	ColorActive  = "#2ea05a" // active mitigations on the status page
)

// csp forbids every fetch: a report opened from disk reaches nothing.
const csp = `default-src 'none'; style-src 'unsafe-inline'; img-src data:`

const style = `body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1000px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px}h3{font-size:15px;margin:18px 0 4px}
table{border-collapse:collapse;margin:6px 0}td,th{padding:2px 10px 2px 0;text-align:left;vertical-align:middle}
th{font-weight:600;border-bottom:1px solid #ccc}.num{text-align:right;font-variant-numeric:tabular-nums}
.muted{color:#666}.big{font-size:28px;font-weight:600}.card{display:inline-block;margin:0 28px 12px 0}
code{font-size:13px}svg{display:block}`

var funcs = template.FuncMap{
	"timeline": timeline,
	"hbar":     hbar,
	"pct":      func(f float64) string { return fmt.Sprintf("%.0f%%", f*100) },
	"num":      func(f float64) string { return trimFloat(f) },
	"ts":       func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") },
	"dur":      func(d time.Duration) string { return d.Round(time.Millisecond).String() },
	"secs":     func(f float64) string { return fmt.Sprintf("%.3g s", f) },
	"ms":       func(f float64) string { return fmt.Sprintf("%.2f ms", f*1000) },
	"maxKey": func(ks []KeyReport) int64 {
		var m int64
		for _, k := range ks {
			m = max(m, k.Requests)
		}
		return m
	},
	"maxCount": func(cs []Count) int {
		var m int
		for _, c := range cs {
			m = max(m, c.N)
		}
		return m
	},
	"maxActed": func(as []ActionCount) int64 {
		var m int64
		for _, a := range as {
			m = max(m, a.Clients)
		}
		return m
	},
	"maxRate": func(rs []Rate) float64 {
		var m float64
		for _, r := range rs {
			m = max(m, r.Total)
		}
		return m
	},
	"verb":       verb,
	"colorActed": func() string { return ColorActed },
	"colorNear":  func() string { return ColorNear },
	"colorAct":   func() string { return ColorActive },
	"colorKey":   func() string { return "#8a9bb8" },
	"float": func(v any) float64 {
		switch x := v.(type) {
		case int64:
			return float64(x)
		case int:
			return float64(x)
		case float64:
			return x
		}
		return 0
	},
}

// verb says what an action did to a client: "blocked", "challenged".
func verb(action string) string {
	switch action {
	case "block":
		return "blocked"
	case "challenge":
		return "challenged"
	case "rate_limit":
		return "rate limited"
	case "shadowban":
		return "shadow-banned"
	case "firewall":
		return "firewalled"
	case "throttle":
		return "throttled"
	case "log":
		return "logged"
	}
	return action
}

func trimFloat(f float64) string {
	if f == math.Trunc(f) {
		return fmt.Sprintf("%.0f", f)
	}
	return fmt.Sprintf("%.1f", f)
}

// timeline draws counted requests (blue) and counts over the limit (red) per
// bin, on one scale.
func timeline(counted, trips []int64, start time.Time, bin time.Duration) template.HTML {
	const w, h, left, bottom = 720.0, 110.0, 48.0, 18.0
	var top int64 = 1
	for _, c := range counted {
		top = max(top, c)
	}
	n := float64(max(len(counted), 1))
	bw := (w - left) / n
	var b strings.Builder
	fmt.Fprintf(&b, `<svg width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" role="img">`, w, h, w, h)
	fmt.Fprintf(&b, `<line x1="%.0f" y1="0" x2="%.0f" y2="%.0f" stroke="#999"/><line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#999"/>`,
		left, left, h-bottom, left, h-bottom, w, h-bottom)
	fmt.Fprintf(&b, `<text x="%.0f" y="10" font-size="10" text-anchor="end" fill="#666">%d</text>`, left-4, top)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="10" text-anchor="end" fill="#666">0</text>`, left-4, h-bottom)
	for i, c := range counted {
		x := left + float64(i)*bw
		if c > 0 {
			bh := (h - bottom - 12) * float64(c) / float64(top)
			fmt.Fprintf(&b, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s"><title>%s: %d counted</title></rect>`,
				x, h-bottom-bh, math.Max(bw-0.5, 0.8), bh, ColorCounted, start.Add(time.Duration(i)*bin).UTC().Format("15:04"), c)
		}
		if i < len(trips) && trips[i] > 0 {
			th := math.Max((h-bottom-12)*float64(trips[i])/float64(top), 3)
			fmt.Fprintf(&b, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="%s"><title>%d over the limit</title></rect>`,
				x, h-bottom-th, math.Max(bw-0.5, 1.5), th, ColorTrips, trips[i])
		}
	}
	for j, anchor := range []string{"start", "middle", "end"} {
		i := []int{0, len(counted) / 2, len(counted)}[j]
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" font-size="10" fill="#666" text-anchor="%s">%s</text>`,
			left+float64(i)*bw, h-4, anchor, start.Add(time.Duration(i)*bin).UTC().Format("01-02 15:04"))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// hbar draws a horizontal bar of value/scale (clipped to 1) in color, with a
// dashed mark at mark/scale when mark > 0 (a rule's limit).
func hbar(value, scale, mark float64, color string) template.HTML {
	const w, h = 260.0, 14.0
	if scale <= 0 {
		scale = 1
	}
	bw := math.Min(value/scale, 1) * w
	s := fmt.Sprintf(`<svg width="%.0f" height="%.0f"><rect x="0" y="1" width="%.2f" height="%.0f" fill="%s"/>`, w, h, math.Max(bw, 1), h-2, color)
	if mark > 0 {
		mx := math.Min(mark/scale, 1)*w - 1
		s += fmt.Sprintf(`<line x1="%.1f" y1="0" x2="%.1f" y2="%.0f" stroke="#222" stroke-dasharray="2,2"/>`, mx, mx, h)
	}
	return template.HTML(s + `</svg>`)
}

var replayTmpl = template.Must(template.New("replay").Funcs(funcs).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="` + csp + `">
<title>guardd replay report</title><style>` + style + `</style></head><body>
<h1>guardd replay report</h1>
<p class="muted">{{range $i, $f := .Files}}{{if $i}}, {{end}}<code>{{$f}}</code>{{end}}<br>
{{.Lines}} lines ({{.Malformed}} malformed), events from {{ts .First}} to {{ts .Last}} UTC; replayed in {{dur .Elapsed}}; generated {{ts .Generated}} UTC.
{{.Mitigated}} requests met an active mitigation.</p>
{{with .Summary}}
<h2 id="summary">Summary</h2>
{{- if .Recorded}}
<div class="card"><div class="big" id="acted">{{.Clients}}</div>clients acted on</div>
{{range .ByAction}}<div class="card"><div class="big" id="acted-{{.Action}}">{{.Clients}}</div>{{verb .Action}} <span class="muted">({{.Requests}} requests)</span></div>
{{end}}
{{- if .Clients}}<table><tr><th>action</th><th class="num">clients</th><th class="num">requests</th><th></th></tr>
{{$m := maxActed .ByAction}}{{range .ByAction}}<tr><td>{{.Action}}</td><td class="num">{{.Clients}}</td><td class="num">{{.Requests}}</td><td>{{if .Clients}}{{hbar (float .Clients) (float $m) 0 colorActed}}{{end}}</td></tr>
{{end}}</table>{{else}}<p>No client was acted on.</p>{{end}}
{{- else}}<p class="muted">This replay did not follow clients: the rules' part only.</p>{{end}}
<h3>Rules that acted</h3>
{{if .Acted}}<table><tr><th>rule</th><th>action</th><th class="num">keys mitigated</th><th class="num">clients</th><th class="num">counts over the limit</th></tr>
{{range .Acted}}<tr><td>{{.Name}}</td><td>{{.Action}}</td><td class="num">{{.Keys}}</td><td class="num">{{.Clients}}</td><td class="num">{{.Trips}}</td></tr>
{{end}}</table>{{else}}<p>No rule acted.</p>{{end}}
{{- if .Top}}
<h3>Top keys</h3>
<table><tr><th>key</th><th>rule</th><th>action</th><th class="num">requests</th></tr>
{{range .Top}}<tr><td><code>{{.Key}}</code></td><td>{{.Rule}}</td><td>{{.Action}}</td><td class="num">{{.Requests}}</td></tr>
{{end}}</table>{{end}}
{{end}}
{{- if .Throttled}}
<h2>Throttle rules</h2>
<p class="muted">Requests each request-time limit counted and refused, as the decision API would have, on the lines' own time. A shadow rule refuses nothing: its column says what it would have refused.</p>
<table><tr><th>rule</th><th class="num">counted</th><th class="num">refused</th><th class="num">clients refused</th><th></th></tr>
{{range .Throttled}}<tr><td>{{.Rule}}</td><td class="num">{{.Counted}}</td><td class="num">{{.Refused}}</td><td class="num">{{.Clients}}</td><td>{{if .Shadow}}shadow: would have refused{{end}}</td></tr>
{{end}}</table>{{end}}

<h2>Requests and trips over time, per rule</h2>
<p class="muted">Blue: requests the rule counted, per {{dur .Bin}}. Red: counts that went over the limit (a trip, or a key staying over it).</p>
{{range .Rules}}{{if .TotalCounted}}<h3 id="rule-{{.Name}}">{{.Name}} <span class="muted">— {{.Title}}; {{num .Limit}} per {{dur .Period}}, {{.Action}}; {{.TotalCounted}} counted, {{.TotalTrips}} over the limit, {{.Mitigations}} keys mitigated</span></h3>
{{timeline .Counted .Trips $.Start $.Bin}}
{{end}}{{end}}
{{- with .Quiet}}<details id="quiet"><summary>{{len .}} rules matched nothing</summary>
<table><tr><th>rule</th><th>title</th><th>limit</th><th>action</th></tr>
{{range .}}<tr><td>{{.Name}}</td><td>{{.Title}}</td><td>{{num .Limit}} per {{dur .Period}}</td><td>{{.Action}}</td></tr>
{{end}}</table></details>{{end}}

<h2>Most mitigated keys</h2>
{{if .Top}}<table><tr><th>key</th><th>rule</th><th>action</th><th class="num">requests</th><th></th><th>first trip</th><th>last request</th></tr>
{{$m := maxKey .Top}}{{range .Top}}<tr><td><code>{{.Key}}</code></td><td>{{.Rule}}</td><td>{{.Action}}</td><td class="num">{{.Requests}}</td><td>{{hbar (float .Requests) (float $m) 0 colorKey}}</td><td>{{ts .First}}</td><td>{{ts .Last}}</td></tr>
{{end}}</table>{{else}}<p>No rule tripped.</p>{{end}}

<h2>How close benign-looking keys came to each limit</h2>
<p class="muted">Per rule, the keys that never tripped, closest to the limit first: their highest count in a window against the limit (dashed). Keys near 100% are where a threshold would start catching ordinary clients.</p>
{{range .Rules}}{{if .TotalCounted}}<h3>{{.Name}} <span class="muted">— limit {{num .Limit}} per {{dur .Period}}</span></h3>
{{if .Closest}}<table><tr><th>key</th><th class="num">peak</th><th class="num">of limit</th><th></th><th>at</th></tr>
{{$r := .}}{{range .Closest}}<tr><td><code>{{.Key}}</code></td><td class="num">{{num .Peak}}</td><td class="num">{{pct .Ratio}}</td><td>{{hbar .Peak $r.Limit $r.Limit colorNear}}</td><td>{{ts .At}}</td></tr>
{{end}}</table>{{if .Dropped}}<p class="muted">More keys came within half of the limit than the report keeps.</p>{{end}}
{{else}}<p class="muted">No key that stayed under the limit came within half of it.</p>{{end}}
{{end}}{{end}}
</body></html>
`))

// WriteReplayHTML writes the replay report.
func WriteReplayHTML(w io.Writer, r *Replay) error {
	return replayTmpl.Execute(w, r)
}

package challenge

import (
	_ "embed"
	"html/template"
	"net/http"

	"github.com/guardd/guardd/rules"
)

//go:embed assets/pow.js
var powJS string

// Page is what a challenge page shows.
type Page struct {
	Challenge  string // from AppendChallenge
	Tier       rules.ChallengeTier
	Difficulty int
	Return     string // ReturnURL of the request's URI
}

var pageTmpl = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
{{- if .Cookie}}
<meta http-equiv="refresh" content="0;url={{.SolveURL}}">
{{- end}}
<title>Checking your browser</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:38rem;margin:4rem auto;padding:0 1rem;line-height:1.6;color:#1b1b1b;background:#fff;font-size:1.0625rem}
h1{font-size:1.6rem;line-height:1.3}
#guardd-status{font-weight:600;border-left:.25rem solid #1b1b1b;padding:.25rem .75rem}
a{color:#0645ad}
@media (prefers-color-scheme:dark){body{color:#eee;background:#111}#guardd-status{border-color:#eee}a{color:#8ab4f8}}
</style>
</head>
<body>
<main id="guardd-challenge" data-challenge="{{.Challenge}}" data-difficulty="{{.Difficulty}}" data-return="{{.Return}}">
<h1>Checking your browser</h1>
<p>This site makes sure its visitors are people before serving them, to keep automated traffic out.</p>
{{- if .Cookie}}
<p id="guardd-status" role="status" aria-live="polite">You will be taken to the page you asked for in a moment.</p>
<p>If nothing happens, <a href="{{.SolveURL}}">continue to the page</a>. Your browser needs to accept cookies from this site.</p>
{{- else}}
<p id="guardd-status" role="status" aria-live="polite">Waiting for JavaScript to start…</p>
<p>Your browser is doing a short calculation. When it is done, you will be taken to the page you asked for; this usually takes a second or two, and you do not need to do anything.</p>
<noscript><p><strong>This check needs JavaScript, which is turned off or unavailable in your browser.</strong> Turn JavaScript on for this site, then <a href="{{.Return}}">reload the page</a>. Your browser also needs to accept cookies from this site.</p></noscript>
{{- end}}
</main>
{{- if not .Cookie}}
<script>{{.Script}}</script>
{{- end}}
</body>
</html>
`))

type pageData struct {
	Page
	Cookie   bool
	SolveURL string
	Script   template.JS
}

// WritePage writes a challenge page with status (the decision API uses
// 403, as a refusal that a browser can lift), Content-Type text/html and
// Cache-Control no-store.
func WritePage(w http.ResponseWriter, status int, p Page) error {
	d := pageData{Page: p, Cookie: p.Tier == rules.TierCookie, Script: template.JS(powJS)}
	if d.Cookie {
		d.SolveURL = SolveURL(p.Challenge, "", p.Return)
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Robots-Tag", "noindex")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	w.WriteHeader(status)
	return pageTmpl.Execute(w, d)
}

package main

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/pprof"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/config"
	"github.com/guardd/guardd/ingest/tail"
	"github.com/guardd/guardd/mitigation"
)

func init() {
	register("decisions", "list, add or delete mitigations of a running daemon", runDecisions)
	register("status", "show a running daemon's status", runStatus)
}

// adminHandler serves the admin API. Everything but /metrics and /healthz
// needs the bearer token.
func (d *daemon) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(d.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /v1/status", d.auth(d.status))
	mux.HandleFunc("GET /debug/pprof/", d.auth(pprof.Index))
	mux.HandleFunc("GET /debug/pprof/profile", d.auth(pprof.Profile))
	mux.HandleFunc("GET /debug/pprof/trace", d.auth(pprof.Trace))
	mux.HandleFunc("GET /v1/mitigations", d.auth(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, d.store.List(time.Now()))
	}))
	mux.HandleFunc("POST /v1/mitigations", d.auth(d.addMitigation))
	mux.HandleFunc("DELETE /v1/mitigations/{id}", d.auth(func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
		if err != nil {
			apiError(w, http.StatusBadRequest, "id: want a number")
			return
		}
		if !d.store.Delete(id) {
			apiError(w, http.StatusNotFound, "no active mitigation with that id")
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	return mux
}

func (d *daemon) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(d.token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="guardd"`)
			apiError(w, http.StatusUnauthorized, "missing or wrong bearer token")
			return
		}
		h(w, r)
	}
}

type statusJSON struct {
	Uptime      string         `json:"uptime"`
	Rules       []string       `json:"rules"`
	Mitigations int            `json:"mitigations"`
	ByAction    map[string]int `json:"mitigations_by_action"`
	CounterKeys int            `json:"counter_keys"`
	Tail        any            `json:"tail"`
	LastEvent   string         `json:"last_event"`
}

func (d *daemon) status(w http.ResponseWriter, r *http.Request) {
	p := d.pipe.Load()
	st := statusJSON{Uptime: time.Since(d.started).Round(time.Second).String(), ByAction: map[string]int{}, Tail: tail.Stats{}}
	if ts := d.tailStats.Load(); ts != nil {
		st.Tail = *ts
	}
	for _, rl := range p.rules.Rules() {
		st.Rules = append(st.Rules, rl.Name)
	}
	for _, m := range d.store.List(time.Now()) {
		st.Mitigations++
		st.ByAction[m.Action.String()]++
	}
	st.CounterKeys, _ = p.engine.Keys()
	if t := d.lastEvent.Load(); t != 0 {
		st.LastEvent = time.Unix(0, t).UTC().Format(time.RFC3339Nano)
	}
	writeJSON(w, http.StatusOK, st)
}

// addRequest is the body of POST /v1/mitigations.
type addRequest struct {
	Scope    map[string]string `json:"scope"`
	Action   string            `json:"action"`
	Duration string            `json:"duration"`
	Reason   string            `json:"reason"`
}

func (d *daemon) addMitigation(w http.ResponseWriter, r *http.Request) {
	var req addRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		apiError(w, http.StatusBadRequest, "body: "+err.Error())
		return
	}
	action, err := mitigation.ParseAction(req.Action)
	if err != nil {
		apiError(w, http.StatusBadRequest, err.Error())
		return
	}
	dur, err := time.ParseDuration(req.Duration)
	if err != nil || dur <= 0 {
		apiError(w, http.StatusBadRequest, "duration: want a positive Go duration such as 30m or 24h")
		return
	}
	if len(req.Scope) == 0 {
		apiError(w, http.StatusBadRequest, `scope: want at least one characteristic, e.g. {"ip.src":"203.0.113.7"}`)
		return
	}
	var sc mitigation.Scope
	for name, v := range req.Scope {
		c, err := characteristics.Parse(name)
		if err != nil {
			apiError(w, http.StatusBadRequest, "scope: "+err.Error())
			return
		}
		sc = append(sc, mitigation.Pair{Name: c.String(), Value: v})
	}
	if sc, err = mitigation.Canonical(sc); err != nil {
		apiError(w, http.StatusBadRequest, "scope: "+err.Error())
		return
	}
	rule := "manual"
	if req.Reason != "" {
		rule = "manual: " + req.Reason
	}
	now := time.Now()
	m, ok, err := d.store.Add(mitigation.Mitigation{Rule: rule, Action: action, Scope: sc, Expires: now.Add(dur), Origin: "api"}, now)
	if err != nil {
		apiError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !ok {
		apiError(w, http.StatusConflict, "the allowlist covers that scope; it is never mitigated")
		return
	}
	writeJSON(w, http.StatusCreated, m)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func apiError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

// adminClient talks to a running daemon's admin API.
type adminClient struct {
	base, token string
	c           *http.Client
}

func adminFlags(fs *flag.FlagSet) func() (*adminClient, error) {
	configPath := fs.String("config", "", "read the admin address and token file from this configuration")
	addr := fs.String("admin", "", "admin API address (default "+config.DefaultAdminListen+")")
	tokenFile := fs.String("token-file", "", "admin token file (default "+config.DefaultStateDir+"/admin.token)")
	return func() (*adminClient, error) {
		cfg, err := config.Load(*configPath)
		if err != nil {
			return nil, err
		}
		if cfg.Mitigation.StateDir == "" {
			cfg.Mitigation.StateDir = config.DefaultStateDir
		}
		a := or(*addr, or(cfg.Admin.Listen, config.DefaultAdminListen))
		tf := or(*tokenFile, or(cfg.Admin.TokenFile, cfg.Mitigation.StateDir+"/admin.token"))
		b, err := os.ReadFile(tf)
		if err != nil {
			return nil, fmt.Errorf("admin token: %w", err)
		}
		return &adminClient{base: "http://" + a, token: strings.TrimSpace(string(b)), c: &http.Client{Timeout: 10 * time.Second}}, nil
	}
}

func (a *adminClient) do(method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, a.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+a.token)
	resp, err := a.c.Do(req)
	if err != nil {
		return fmt.Errorf("admin API: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if resp.StatusCode >= 300 {
		var e struct{ Error string }
		json.Unmarshal(b, &e)
		return fmt.Errorf("admin API: %s: %s", resp.Status, or(e.Error, strings.TrimSpace(string(b))))
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

func runDecisions(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: guardd decisions list|add|delete [flags]\n  add:    guardd decisions add --scope ip.src=203.0.113.7 --action block --duration 1h [--reason TEXT]\n  delete: guardd decisions delete ID")
		return 2
	}
	verb := args[0]
	fs := flag.NewFlagSet("decisions "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	client := adminFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	var scopes stringList
	fs.Var(&scopes, "scope", "characteristic=value (repeatable), e.g. ip.src=203.0.113.7")
	action := fs.String("action", "block", "block, rate_limit, shadowban, firewall or log")
	duration := fs.String("duration", "1h", "how long")
	reason := fs.String("reason", "", "why, shown as the rule")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	a, err := client()
	if err != nil {
		fmt.Fprintln(stderr, "guardd decisions:", err)
		return 1
	}
	switch verb {
	case "list":
		var ms []mitigation.Mitigation
		if err := a.do("GET", "/v1/mitigations", nil, &ms); err != nil {
			fmt.Fprintln(stderr, "guardd decisions:", err)
			return 1
		}
		if *asJSON {
			json.NewEncoder(stdout).Encode(ms)
			return 0
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tACTION\tSCOPE\tRULE\tEXPIRES")
		for _, m := range ms {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", m.ID, m.Action, m.Scope, m.Rule, m.Expires.UTC().Format(time.RFC3339))
		}
		tw.Flush()
	case "add":
		req := addRequest{Scope: map[string]string{}, Action: *action, Duration: *duration, Reason: *reason}
		for _, s := range scopes {
			k, v, ok := strings.Cut(s, "=")
			if !ok {
				fmt.Fprintf(stderr, "guardd decisions: --scope %q: want characteristic=value\n", s)
				return 2
			}
			req.Scope[k] = v
		}
		var m mitigation.Mitigation
		if err := a.do("POST", "/v1/mitigations", req, &m); err != nil {
			fmt.Fprintln(stderr, "guardd decisions:", err)
			return 1
		}
		fmt.Fprintf(stdout, "added %d: %s %s until %s\n", m.ID, m.Action, m.Scope, m.Expires.UTC().Format(time.RFC3339))
	case "delete":
		if fs.NArg() != 1 {
			fmt.Fprintln(stderr, "usage: guardd decisions delete ID")
			return 2
		}
		if err := a.do("DELETE", "/v1/mitigations/"+fs.Arg(0), nil, nil); err != nil {
			fmt.Fprintln(stderr, "guardd decisions:", err)
			return 1
		}
		fmt.Fprintln(stdout, "deleted", fs.Arg(0))
	default:
		fmt.Fprintf(stderr, "guardd decisions: unknown verb %q: want list, add or delete\n", verb)
		return 2
	}
	return 0
}

func runStatus(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	client := adminFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	a, err := client()
	if err != nil {
		fmt.Fprintln(stderr, "guardd status:", err)
		return 1
	}
	var st json.RawMessage
	if err := a.do("GET", "/v1/status", nil, &st); err != nil {
		fmt.Fprintln(stderr, "guardd status:", err)
		return 1
	}
	var out bytes.Buffer
	json.Indent(&out, st, "", "  ")
	fmt.Fprintln(stdout, out.String())
	return 0
}

package main

import (
	"crypto/subtle"
	"encoding/json"
	"io"
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/ingest/tail"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/bulk"
)

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
	mux.Handle("POST /v1/mitigations/bulk", d.auth((&bulk.Importer{Store: d.store, Log: d.log}).ServeHTTP))
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
		d.log.Info("mitigation deleted", "id", id, "by", bulk.Actor(r))
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
	d.log.Info("mitigation added", "id", m.ID, "scope", m.Scope.String(), "action", m.Action.String(), "expires", m.Expires, "rule", m.Rule, "by", bulk.Actor(r))
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

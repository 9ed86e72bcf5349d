package admin

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/bulk"
)

// Store is what the API needs of the mitigation table.
type Store interface {
	bulk.Adder
	List(now time.Time) []mitigation.Mitigation
	Add(m mitigation.Mitigation, now time.Time) (mitigation.Mitigation, bool, error)
	Delete(id uint64) bool
}

// Config configures New.
type Config struct {
	Store    Store               // required
	Token    string              // required: the bearer token, 16 characters or more
	Gatherer prometheus.Gatherer // served at /metrics; nil: no /metrics
	Status   func() any          // the body of /v1/status; nil: {}
	Now      func() time.Time    // nil: time.Now
	// Logger records operators' changes with who made them; nil: discard.
	Logger *slog.Logger
	// StatusPage is served at GET /status without the token, like /metrics:
	// a page for people, with counts and no addresses. nil: none.
	StatusPage http.Handler
	// Explain answers GET /v1/explain/{address} (token required): why the
	// client is mitigated, or how close it is to each rule's limit. nil: 404.
	Explain func(addr netip.Addr) any
	// Deleted, if set, is told of every mitigation an operator deleted (the
	// daemon resets the rule's count for its key, so that a rule-made
	// mitigation does not come straight back under a new ID).
	Deleted func(m mitigation.Mitigation)
}

// New returns the admin API's handler.
func New(cfg Config) (http.Handler, error) {
	if cfg.Store == nil {
		return nil, errors.New("admin: no store")
	}
	if len(cfg.Token) < 16 {
		return nil, errors.New("admin: token shorter than 16 characters")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Status == nil {
		cfg.Status = func() any { return struct{}{} }
	}
	a := &api{cfg: cfg}
	mux := http.NewServeMux()
	if cfg.Gatherer != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{}))
	}
	if cfg.StatusPage != nil {
		mux.Handle("GET /status", cfg.StatusPage)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /v1/status", a.auth(func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, cfg.Status()) }))
	mux.HandleFunc("GET /debug/pprof/", a.auth(pprof.Index))
	mux.HandleFunc("GET /debug/pprof/profile", a.auth(pprof.Profile))
	mux.HandleFunc("GET /debug/pprof/trace", a.auth(pprof.Trace))
	mux.HandleFunc("GET /v1/mitigations", a.auth(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, cfg.Store.List(cfg.Now()))
	}))
	mux.HandleFunc("POST /v1/mitigations", a.auth(a.add))
	if cfg.Explain != nil {
		mux.HandleFunc("GET /v1/explain/{addr}", a.auth(func(w http.ResponseWriter, r *http.Request) {
			addr, err := netip.ParseAddr(r.PathValue("addr"))
			if err != nil {
				apiError(w, http.StatusBadRequest, "address: want an IPv4 or IPv6 address such as 203.0.113.7")
				return
			}
			writeJSON(w, http.StatusOK, cfg.Explain(addr.Unmap().WithZone("")))
		}))
	}
	mux.Handle("POST /v1/mitigations/bulk", a.auth((&bulk.Importer{Store: cfg.Store, Log: cfg.Logger, Now: cfg.Now}).ServeHTTP))
	mux.HandleFunc("DELETE /v1/mitigations/{id}", a.auth(func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
		if err != nil {
			apiError(w, http.StatusBadRequest, "id: want a number")
			return
		}
		var held mitigation.Mitigation
		for _, m := range cfg.Store.List(cfg.Now()) {
			if m.ID == id {
				held = m
				break
			}
		}
		if !cfg.Store.Delete(id) {
			apiError(w, http.StatusNotFound, "no active mitigation with that id")
			return
		}
		a.cfg.Logger.Info("mitigation deleted", "id", id, "rule", held.Rule, "scope", held.Scope.String(), "origin", held.Origin, "by", bulk.Actor(r))
		if cfg.Deleted != nil && held.ID == id {
			cfg.Deleted(held)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	return mux, nil
}

type api struct{ cfg Config }

func (a *api) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(a.cfg.Token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="guardd"`)
			apiError(w, http.StatusUnauthorized, "missing or wrong bearer token")
			return
		}
		h(w, r)
	}
}

// AddRequest is the body of POST /v1/mitigations.
type AddRequest struct {
	Scope    map[string]string `json:"scope"`
	Action   string            `json:"action"`
	Duration string            `json:"duration"`
	Reason   string            `json:"reason"`
}

func (a *api) add(w http.ResponseWriter, r *http.Request) {
	var req AddRequest
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
	now := a.cfg.Now()
	m, ok, err := a.cfg.Store.Add(mitigation.Mitigation{Rule: rule, Action: action, Scope: sc, Expires: now.Add(dur), Origin: mitigation.OriginAPI}, now)
	if err != nil {
		apiError(w, http.StatusBadRequest, err.Error())
		return
	}
	if !ok {
		apiError(w, http.StatusConflict, "the allowlist covers that scope; it is never mitigated")
		return
	}
	a.cfg.Logger.Info("mitigation added", "id", m.ID, "scope", m.Scope.String(), "action", m.Action.String(), "expires", m.Expires, "rule", m.Rule, "by", bulk.Actor(r))
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

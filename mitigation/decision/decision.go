package decision

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/rules"
	"github.com/guardd/guardd/shadowban"
)

// Header names nginx sets on the auth subrequest.
const (
	HeaderClientIP   = "X-Real-IP"
	HeaderClientPort = "X-Real-Port"
	HeaderMethod     = "X-Original-Method"
	HeaderURI        = "X-Original-URI"
	// HeaderDecision carries the decision from /v1/decide to /v1/respond.
	HeaderDecision = "X-Guardd-Decision"
)

// Canonical forms of the header names, so lookups do not canonicalise (and
// allocate) per request.
var (
	hClientIP   = textproto.CanonicalMIMEHeaderKey(HeaderClientIP)
	hClientPort = textproto.CanonicalMIMEHeaderKey(HeaderClientPort)
	hMethod     = textproto.CanonicalMIMEHeaderKey(HeaderMethod)
	hURI        = textproto.CanonicalMIMEHeaderKey(HeaderURI)
	hDecision   = textproto.CanonicalMIMEHeaderKey(HeaderDecision)
)

func get(h http.Header, canonical string) string {
	if v := h[canonical]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Store is what the handler needs of the mitigation table.
type Store interface {
	Lookup(key uint64, now time.Time) (mitigation.Mitigation, bool)
	Shapes() []mitigation.Shape
}

// Config configures a Handler.
type Config struct {
	Store    Store                     // required
	Rules    *rules.Set                // rules whose mitigation expressions apply; may be replaced with SetRules
	Enricher *characteristics.Enricher // nil: prefixes only
	Shadow   *shadowban.Responder      // nil: an empty JSON 200
	// MaxInFlight sheds load: past it, requests are answered 503 by
	// /v1/respond's rules without evaluation. 0 means 4096.
	MaxInFlight int
	Registerer  prometheus.Registerer
	Logger      *slog.Logger
	Now         func() time.Time
}

// Handler serves /v1/decide and /v1/respond.
type Handler struct {
	store    Store
	state    atomic.Pointer[ruleState]
	enricher *characteristics.Enricher
	shadow   *shadowban.Responder
	now      func() time.Time
	log      *slog.Logger
	max      int64
	inflight atomic.Int64
	pool     sync.Pool
	names    sync.Map // canonical header name -> lower-case name
	m        *metrics
}

type ruleState struct {
	set   *rules.Set
	index map[string]int
	rules []*rules.Rule
}

type scratch struct {
	ev  characteristics.Event
	m   rules.Matches
	buf []byte
}

// New validates cfg.
func New(cfg Config) (*Handler, error) {
	if cfg.Store == nil {
		return nil, errors.New("decision: no store")
	}
	h := &Handler{store: cfg.Store, enricher: cfg.Enricher, shadow: cfg.Shadow, now: cfg.Now, log: cfg.Logger, max: int64(cfg.MaxInFlight)}
	if h.now == nil {
		h.now = time.Now
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.max <= 0 {
		h.max = 4096
	}
	if h.enricher == nil {
		en, err := characteristics.NewEnricher(characteristics.EnrichConfig{})
		if err != nil {
			return nil, err
		}
		h.enricher = en
	}
	if h.shadow == nil {
		h.shadow, _ = shadowban.New(shadowban.Config{})
	}
	h.pool.New = func() any { return &scratch{buf: make([]byte, 0, 512)} }
	h.SetRules(cfg.Rules)
	h.m = newMetrics(cfg.Registerer)
	return h, nil
}

// SetRules replaces the rules, after a reload.
func (h *Handler) SetRules(set *rules.Set) {
	st := &ruleState{set: set, index: map[string]int{}}
	if set != nil {
		st.rules = set.Rules()
		for i, r := range st.rules {
			st.index[r.Name] = i
		}
	}
	h.state.Store(st)
}

// ServeHTTP routes /v1/decide and /v1/respond.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/decide":
		h.decide(w, r)
	case "/v1/respond":
		h.respond(w, r)
	default:
		http.NotFound(w, r)
	}
}

// Decision is what /v1/decide concluded.
type Decision struct {
	Action  mitigation.Action // ActionLog means allow
	Allow   bool
	Rule    string
	Retry   time.Duration // until the mitigation ends
	Limit   float64       // the rule's requests per window, for RateLimit-Policy
	Window  time.Duration
	Shed    bool
	Expires time.Time
}

func (h *Handler) decide(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if h.inflight.Add(1) > h.max {
		h.inflight.Add(-1)
		d := Decision{Shed: true, Retry: time.Second}
		h.deny(w, d)
		h.m.observe("shed", start)
		return
	}
	defer h.inflight.Add(-1)
	s := h.pool.Get().(*scratch)
	d, err := h.Decide(r, s, h.now())
	h.pool.Put(s)
	if err != nil {
		// A request we cannot read is allowed and counted: failing closed on
		// our own parse error would punish clients for our bugs.
		h.m.invalid.Inc()
		w.WriteHeader(http.StatusNoContent)
		h.m.observe("invalid", start)
		return
	}
	if d.Allow {
		w.WriteHeader(http.StatusNoContent)
		h.m.observe("allow", start)
		return
	}
	h.deny(w, d)
	h.m.observe(d.Action.String(), start)
}

// ErrNoClient is returned for a decide request without a client address.
var ErrNoClient = errors.New("decision: no valid " + HeaderClientIP)

// Decide reads the request nginx forwarded into s's event and decides. It
// allocates nothing once s and the caches are warm.
func (h *Handler) Decide(r *http.Request, s *scratch, now time.Time) (Decision, error) {
	ev := &s.ev
	ev.Reset()
	if err := h.readRequest(r, ev); err != nil {
		return Decision{Allow: true}, err
	}
	ev.Time = now
	ev.Source = characteristics.SourceDecision
	h.enricher.Enrich(ev)
	st := h.state.Load()
	if st.set != nil {
		st.set.Eval(ev, &s.m)
	}
	best := Decision{Allow: true}
	var bestM mitigation.Mitigation
	for _, sh := range h.store.Shapes() {
		key, buf, ok := sh.Key(ev, s.buf[:0])
		s.buf = buf
		if !ok {
			continue
		}
		m, found := h.store.Lookup(key, now)
		if !found || m.Action == mitigation.ActionLog {
			continue
		}
		if m.Origin == "rule" {
			// A rule's mitigation applies only to requests its mitigation
			// expression matches.
			ri, known := st.index[m.Rule]
			if known && !s.m.Mitigate(ri) {
				continue
			}
		}
		if best.Allow || strength(m.Action) > strength(bestM.Action) {
			bestM = m
			best = Decision{Action: m.Action, Rule: m.Rule, Expires: m.Expires, Retry: m.Expires.Sub(now)}
			if ri, known := st.index[m.Rule]; known {
				best.Limit, best.Window = st.rules[ri].Requests, st.rules[ri].Period
			}
		}
	}
	return best, nil
}

// strength orders actions as the store does: a block beats a rate limit.
func strength(a mitigation.Action) int {
	switch a {
	case mitigation.ActionRateLimit:
		return 1
	case mitigation.ActionShadowBan:
		return 2
	case mitigation.ActionBlock:
		return 3
	case mitigation.ActionFirewall:
		return 4
	}
	return 0
}

// readRequest fills ev from the auth subrequest.
func (h *Handler) readRequest(r *http.Request, ev *characteristics.Event) error {
	ip, err := netip.ParseAddr(strings.TrimSpace(get(r.Header, hClientIP)))
	if err != nil {
		return ErrNoClient
	}
	ev.IP = ip
	if p, err := strconv.ParseUint(get(r.Header, hClientPort), 10, 16); err == nil {
		ev.Port = uint16(p)
	}
	ev.Method = get(r.Header, hMethod)
	if ev.Method == "" {
		ev.Method = r.Method
	}
	uri := get(r.Header, hURI)
	if uri == "" {
		uri = r.URL.RequestURI()
	}
	ev.Path, ev.Query, _ = strings.Cut(uri, "?")
	ev.Host = r.Host
	for name, vals := range r.Header {
		if len(vals) == 0 {
			continue
		}
		switch name {
		case hClientIP, hClientPort, hMethod, hURI:
			continue
		case "User-Agent":
			ev.UserAgent = vals[0]
		case "Referer":
			ev.Referer = vals[0]
		case "Cookie":
			for _, v := range vals {
				ev.Cookies = appendCookies(ev.Cookies, v)
			}
		}
		ev.Headers = append(ev.Headers, characteristics.Field{Name: h.lower(name), Value: vals[0]})
	}
	return nil
}

// lower returns a header name in lower case, cached so requests do not
// allocate. The cache is bounded: past 4096 names, new ones are lowered per
// request.
func (h *Handler) lower(name string) string {
	if v, ok := h.names.Load(name); ok {
		return v.(string)
	}
	l := strings.ToLower(name)
	if h.m.names.Load() < 4096 {
		h.m.names.Add(1)
		h.names.Store(name, l)
	}
	return l
}

// appendCookies splits a Cookie header into name=value pairs without
// allocating: the strings alias v.
func appendCookies(dst []characteristics.Field, v string) []characteristics.Field {
	for v != "" {
		var part string
		part, v, _ = strings.Cut(v, ";")
		part = strings.TrimLeft(part, " \t")
		name, val, ok := strings.Cut(part, "=")
		if !ok || name == "" {
			continue
		}
		dst = append(dst, characteristics.Field{Name: strings.TrimSpace(name), Value: strings.Trim(strings.TrimSpace(val), `"`)})
	}
	return dst
}

// deny answers 401 with the decision for nginx to pass to /v1/respond.
func (h *Handler) deny(w http.ResponseWriter, d Decision) {
	w.Header()[hDecision] = []string{d.encode()}
	w.WriteHeader(http.StatusUnauthorized)
}

// encode writes the decision as "action;retry=N;rule=NAME;q=LIMIT;w=SECONDS".
func (d Decision) encode() string {
	action := d.Action.String()
	if d.Shed {
		action = "shed"
	}
	b := make([]byte, 0, 96)
	b = append(b, action...)
	b = append(b, ";retry="...)
	b = strconv.AppendInt(b, retrySeconds(d.Retry), 10)
	if d.Rule != "" {
		b = append(b, ";rule="...)
		b = append(b, d.Rule...)
	}
	if d.Limit > 0 {
		b = append(b, ";q="...)
		b = strconv.AppendFloat(b, d.Limit, 'f', -1, 64)
		b = append(b, ";w="...)
		b = strconv.AppendInt(b, int64(d.Window/time.Second), 10)
	}
	return string(b)
}

// retrySeconds rounds up: a client told 0 would come straight back.
func retrySeconds(d time.Duration) int64 {
	return max(1, int64(math.Ceil(d.Seconds())))
}

type parsedDecision struct {
	action, rule string
	retry        int64
	q            string
	w            int64
}

func parseDecision(s string) (parsedDecision, error) {
	var p parsedDecision
	parts := strings.Split(s, ";")
	p.action = parts[0]
	switch p.action {
	case "block", "firewall", "rate_limit", "shadowban", "shed":
	default:
		return p, fmt.Errorf("decision: unknown action %q", p.action)
	}
	for _, kv := range parts[1:] {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "retry":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return p, fmt.Errorf("decision: retry %q", v)
			}
			p.retry = n
		case "rule":
			p.rule = v
		case "q":
			if _, err := strconv.ParseFloat(v, 64); err != nil {
				return p, fmt.Errorf("decision: q %q", v)
			}
			p.q = v
		case "w":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return p, fmt.Errorf("decision: w %q", v)
			}
			p.w = n
		}
	}
	return p, nil
}

// respond renders the answer the client gets for a denied request.
func (h *Handler) respond(w http.ResponseWriter, r *http.Request) {
	p, err := parseDecision(r.Header.Get(HeaderDecision))
	if err != nil {
		// Only nginx calls this; a missing decision is a configuration error.
		h.log.Warn("decision: respond without a valid decision", "err", err)
		http.Error(w, "Forbidden", http.StatusForbidden)
		return
	}
	method := r.Header.Get(HeaderMethod)
	if method == "" {
		method = r.Method
	}
	uri := r.Header.Get(HeaderURI)
	if uri == "" {
		uri = r.URL.RequestURI()
	}
	hd := w.Header()
	hd.Set("Cache-Control", "no-store")
	retry := strconv.FormatInt(p.retry, 10)
	switch p.action {
	case "block", "firewall":
		http.Error(w, "Forbidden", http.StatusForbidden)
	case "rate_limit":
		// draft-ietf-httpapi-ratelimit-headers: the current state (nothing
		// left, reset in t) always; the policy (quota per window) when a
		// rule set one (a manual mitigation has none).
		hd.Set("Retry-After", retry)
		hd.Set("RateLimit", fmt.Sprintf(`"%s";r=0;t=%s`, policyName(p.rule), retry))
		if p.q != "" {
			hd.Set("RateLimit-Policy", fmt.Sprintf(`"%s";q=%s;w=%d`, policyName(p.rule), p.q, p.w))
		}
		http.Error(w, "Too Many Requests", http.StatusTooManyRequests)
	case "shed":
		hd.Set("Retry-After", retry)
		http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
	case "shadowban":
		path, _, _ := strings.Cut(uri, "?")
		h.shadow.Write(w, method, path, h.now())
	}
}

// policyName keeps a rule name within a structured-field string.
func policyName(rule string) string {
	if rule == "" {
		return "guardd"
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return '_'
		}
		return r
	}, rule)
}

type metrics struct {
	decisions *prometheus.CounterVec
	duration  prometheus.Histogram
	invalid   prometheus.Counter
	names     atomic.Int64
}

var outcomes = []string{"allow", "block", "rate_limit", "shadowban", "firewall", "shed", "invalid"}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "guardd_decision_requests_total", Help: "Decisions made for nginx, by outcome."}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "guardd_decision_duration_seconds", Help: "Time to decide, from request read to answer.",
			Buckets: []float64{0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.01}}),
		invalid: prometheus.NewCounter(prometheus.CounterOpts{Name: "guardd_decision_invalid_requests_total", Help: "Decide requests without a readable client address, allowed."}),
	}
	for _, o := range outcomes {
		m.decisions.WithLabelValues(o)
	}
	if reg != nil {
		reg.MustRegister(m.decisions, m.duration, m.invalid)
	}
	return m
}

func (m *metrics) observe(outcome string, start time.Time) {
	known := false
	for _, o := range outcomes {
		if o == outcome {
			known = true
			break
		}
	}
	if !known {
		outcome = "allow"
	}
	m.decisions.WithLabelValues(outcome).Inc()
	m.duration.Observe(time.Since(start).Seconds())
}

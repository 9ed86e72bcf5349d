package decision

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/guardd/guardd/challenge"
	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/decision/http1"
	"github.com/guardd/guardd/mitigation/throttle"
	"github.com/guardd/guardd/mitigation/verdict"
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

// The same names as http1 gives them: lower case.
const (
	hClientIP   = "x-real-ip"
	hClientPort = "x-real-port"
	hMethod     = "x-original-method"
	hURI        = "x-original-uri"
	hDecision   = "x-guardd-decision"
)

// Store is what the handler needs of the mitigation table.
type Store interface {
	// LookupAll appends the mitigations in force at now on the scope
	// whose key is key, one per rule.
	LookupAll(key uint64, now time.Time, dst []mitigation.Mitigation) []mitigation.Mitigation
	Shapes() []mitigation.Shape
	// Allowlisted reports whether the request's client must receive no
	// action, whatever the scope of the mitigations its keys would find.
	Allowlisted(ev *characteristics.Event) bool
}

// Counter counts a request when it arrives. The daemon's engine is one: it
// counts the rules that can be counted then (rules.Rule.RequestTime) and
// remembers the request's ID so its log line does not count them again.
type Counter interface {
	CountRequest(ev *characteristics.Event)
}

// Enricher completes a request's event: trusted proxies, prefix, ASN and
// country. *characteristics.Enricher is one; the daemon passes the
// pipeline's Holder, so a configuration reload reaches it.
type Enricher interface {
	Enrich(e *characteristics.Event)
}

// Joiner attaches the fingerprints sniffed from a request's connection
// (TLS: JA3, JA4 ...) to its event, by client address and port;
// *sniff.Join is one, shared with the log pipeline.
type Joiner interface {
	Enrich(e *characteristics.Event) bool
}

// Config configures a Handler.
type Config struct {
	Store    Store                // required
	Rules    *rules.Set           // rules whose mitigation expressions apply; may be replaced with SetRules
	Enricher Enricher             // nil: prefixes only
	Join     Joiner               // nil: no sniffed fingerprints (tls.ja4 ... unknown)
	Shadow   *shadowban.Responder // nil: an empty JSON 200
	// Clearances, if set, checks the clearance of a request a challenge
	// covers: a cleared request is not challenged. nil: none is cleared.
	Clearances verdict.Clearances
	// Counter, if set, counts each decide request before its mitigations
	// are looked up, so the request that trips a rule is already
	// mitigated. nil: requests are counted from the log only.
	Counter Counter
	// Throttle builds the request-time limits of the rules' throttle
	// rules (action: throttle); nil: a throttle.Limiter with local counters
	// and metrics on Registerer.
	Throttle *throttle.Limiter
	// ShedAfter sheds load: a decide request that has waited longer than
	// this in guardd (behind slow decisions on its event loop) is answered
	// "shed" without evaluation, which /v1/respond renders as a 503 with
	// Retry-After. 0 means 100ms; nginx's proxy_read_timeout for the auth
	// subrequest should be longer.
	ShedAfter time.Duration
	// Challenge serves rules with action challenge: it checks clearances,
	// signs challenges for the page and checks their solutions under
	// challenge.PathPrefix. nil: a challenge is answered by its rule's
	// challenge_fallback.
	Challenge  *challenge.Gate
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	Now        func() time.Time
}

// Handler serves /v1/decide and /v1/respond.
type Handler struct {
	store    Store
	state    atomic.Pointer[ruleState]
	enricher Enricher
	join     Joiner
	shadow   *shadowban.Responder
	counter  Counter
	clear    verdict.Clearances
	limiter  *throttle.Limiter
	gate     *challenge.Gate
	now      func() time.Time
	log      *slog.Logger
	shed     atomic.Int64 // ShedAfter, nanoseconds
	pool     sync.Pool
	m        *metrics
}

type ruleState struct {
	set    *rules.Set
	index  map[string]int
	rules  []*rules.Rule
	limits *throttle.Rules // the throttle rules of set; nil when none
}

type scratch struct {
	ev  characteristics.Event
	m   rules.Matches
	mt  rules.Matches // of the throttle rules
	buf []byte
	hdr []byte // a header value
	tok []byte // a challenge or clearance token
	uri []byte // the request's URI, for a challenge's return URL
	req request
}

// New validates cfg.
func New(cfg Config) (*Handler, error) {
	if cfg.Store == nil {
		return nil, errors.New("decision: no store")
	}
	if cfg.ShedAfter < 0 {
		return nil, errors.New("decision: negative ShedAfter")
	}
	h := &Handler{store: cfg.Store, enricher: cfg.Enricher, join: cfg.Join, shadow: cfg.Shadow, counter: cfg.Counter, clear: cfg.Clearances, gate: cfg.Challenge, now: cfg.Now, log: cfg.Logger}
	h.SetShedAfter(cfg.ShedAfter)
	if h.clear == nil && cfg.Challenge != nil {
		h.clear = cfg.Challenge // a passed challenge's clearance
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
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
	h.pool.New = func() any {
		return &scratch{buf: make([]byte, 0, 512), hdr: make([]byte, 0, 256), tok: make([]byte, 0, challenge.MaxChallengeLen), uri: make([]byte, 0, 512)}
	}
	h.limiter = cfg.Throttle
	if h.limiter == nil {
		var err error
		if h.limiter, err = throttle.New(throttle.Config{Registerer: cfg.Registerer, Logger: h.log}); err != nil {
			return nil, err
		}
	}
	h.m = newMetrics(cfg.Registerer)
	if err := h.SetRules(cfg.Rules); err != nil {
		return nil, err
	}
	return h, nil
}

// SetRules replaces the rules, after a reload. If the throttle rules'
// counters cannot be made, nothing changes.
func (h *Handler) SetRules(set *rules.Set) error {
	st := &ruleState{set: set, index: map[string]int{}}
	if set != nil {
		st.rules = set.Rules()
		for i, r := range st.rules {
			st.index[r.Name] = i
		}
		limits, err := h.limiter.Build(set)
		if err != nil {
			return fmt.Errorf("decision: %w", err)
		}
		if limits.Active() {
			st.limits = limits
		}
	}
	if h.gate != nil {
		names := make([]string, len(st.rules))
		for i, r := range st.rules {
			names[i] = r.Name
		}
		h.gate.SetRules(names)
	}
	h.state.Store(st)
	return nil
}

// SetShedAfter sets how long a request may wait for a decision before it
// is shed (Config.ShedAfter); 0 means 100ms. It is safe to call while
// requests are decided, as a reload does.
func (h *Handler) SetShedAfter(d time.Duration) {
	if d <= 0 {
		d = 100 * time.Millisecond
	}
	h.shed.Store(int64(d))
}

// ServeHTTP1 routes /v1/decide and /v1/respond; it is the handler of the
// decision listener's http1.Server.
func (h *Handler) ServeHTTP1(w *http1.Response, r *http1.Request) {
	switch r.Path() {
	case "/v1/decide":
		h.decide(w, r)
	case "/v1/respond":
		h.respond(w, r)
	default:
		http.NotFound(w, nil)
	}
}

// Decision is what /v1/decide concluded: verdict.Decide's answer and, for
// a challenge, what the page or the solve endpoint needs.
type Decision struct {
	verdict.Decision
	// Token is, for a challenge, the signed challenge for the page (Tier,
	// Difficulty) or, when Solved, the clearance to set. It aliases the
	// scratch space of the request.
	Token      []byte
	Tier       rules.ChallengeTier
	Difficulty int
	Solved     bool
	// Reserved: a request under challenge.PathPrefix that is not the
	// solve endpoint; answered 404.
	Reserved bool
}

func (h *Handler) decide(w *http1.Response, r *http1.Request) {
	start := time.Now()
	s := h.pool.Get().(*scratch)
	defer h.pool.Put(s)
	if start.Sub(r.Received) > time.Duration(h.shed.Load()) {
		h.deny(w, Decision{Decision: verdict.Decision{Shed: true, Retry: time.Second}}, s)
		h.m.observe(outcomeShed, start)
		return
	}
	d, err := h.Decide(r, s, h.now())
	if err != nil {
		// A request we cannot read is allowed and counted: failing closed on
		// our own parse error would punish clients for our bugs.
		w.SetStatus(http.StatusNoContent)
		h.m.observe(outcomeInvalid, start)
		return
	}
	if d.Allow {
		if d.Throttle.Matched {
			// For nginx to pass on (auth_request_set + add_header ... always).
			s.hdr = d.Throttle.AppendRateLimit(s.hdr[:0])
			w.AddHeader("RateLimit", s.hdr)
			s.hdr = d.Throttle.AppendPolicy(s.hdr[:0])
			w.AddHeader("RateLimit-Policy", s.hdr)
		}
		w.SetStatus(http.StatusNoContent)
		h.m.observe(outcomeAllow, start)
		return
	}
	h.deny(w, d, s)
	if d.Shed {
		h.m.observe(outcomeShed, start)
		return
	}
	h.m.observe(outcomeOf(d.Action), start)
}

// ErrNoClient is returned for a decide request without a client address.
var ErrNoClient = errors.New("decision: no valid " + HeaderClientIP)

// Decide reads the request nginx forwarded into s's event and decides. It
// allocates nothing once s and the caches are warm. The event aliases r's
// strings, so the decision must be made before r's handler returns.
func (h *Handler) Decide(r *http1.Request, s *scratch, now time.Time) (Decision, error) {
	ev := &s.ev
	ev.Reset()
	if err := h.readRequest(r, ev); err != nil {
		return Decision{Decision: verdict.Decision{Allow: true}}, err
	}
	ev.Time = now
	ev.Source = characteristics.SourceDecision
	h.enricher.Enrich(ev)
	if h.gate != nil && strings.HasPrefix(ev.Path, challenge.PathPrefix) {
		return h.decideReserved(ev, s, now), nil
	}
	if h.join != nil {
		h.join.Enrich(ev)
	}
	s.req = request{h: h, st: h.state.Load(), s: s, now: now, found: s.req.found[:0]}
	d := Decision{Decision: verdict.Decide(&s.req, now)}
	if !d.Allow && d.Action == mitigation.ActionChallenge {
		// A page view under a challenge, without a clearance: the page.
		d = h.answerChallenge(ev, d, s.req.st, s, now)
	}
	if !d.Allow {
		h.limiter.Denied(ev)
	}
	return d, nil
}

// request is a decide request as verdict.Decide reads the tables in force:
// the store through the scope shapes it holds, the rules' mitigation
// expressions evaluated once, when a key has a rule's mitigation (most
// requests have no mitigation at all and skip them). Throttle rules need
// their count expressions on every request: only theirs are evaluated then.
type request struct {
	h         *Handler
	st        *ruleState
	s         *scratch
	now       time.Time
	shapes    []mitigation.Shape      // read at the first Next: after Count, whose trip may add a shape
	shape     int                     // the next shape to look up
	found     []mitigation.Mitigation // on the key of the shape looked up last
	next      int                     // in found
	evaluated bool                    // s.m holds the rules' matches
}

func (r *request) Allowlisted() bool { return r.h.store.Allowlisted(&r.s.ev) }

func (r *request) Count() {
	if r.h.counter != nil {
		r.h.counter.CountRequest(&r.s.ev)
	}
}

func (r *request) Throttle() throttle.Verdict {
	var tv throttle.Verdict
	if limits := r.st.limits; limits != nil {
		s := r.s
		limits.Set().Eval(&s.ev, &s.mt)
		tv, s.buf = limits.Decide(&s.ev, &s.mt, r.now, s.buf)
	}
	return tv
}

func (r *request) Cleared() bool {
	return r.h.clear != nil && r.h.clear.Cleared(&r.s.ev, r.now)
}

func (r *request) PageView() bool { return verdict.PageView(&r.s.ev) }

func (r *request) Next() (verdict.Mitigation, bool) {
	s, st := r.s, r.st
	if r.shape == 0 && r.shapes == nil {
		r.shapes = r.h.store.Shapes()
	}
	for {
		for r.next < len(r.found) {
			m := &r.found[r.next]
			r.next++
			if m.Action == mitigation.ActionLog {
				continue
			}
			ri, known := st.index[m.Rule]
			if known && m.Origin == mitigation.OriginRule {
				// A rule's mitigation applies only to requests its
				// mitigation expression matches.
				if !r.evaluated {
					st.set.Eval(&s.ev, &s.m)
					r.evaluated = true
				}
				if !s.m.Mitigate(ri) {
					continue
				}
			}
			v := verdict.Mitigation{Action: m.Action, Rule: m.Rule, Expires: m.Expires, Order: verdict.NoRule, Fallback: mitigation.ActionRateLimit}
			if known {
				ru := st.rules[ri]
				v.Order, v.Limit, v.Window = ri, ru.Requests, ru.Period
				if ru.Action == mitigation.ActionChallenge {
					v.Fallback = ru.Challenge.Fallback
				}
			}
			return v, true
		}
		if r.shape >= len(r.shapes) {
			return verdict.Mitigation{}, false
		}
		sh := r.shapes[r.shape]
		r.shape++
		key, buf, ok := sh.Key(&s.ev, s.buf[:0])
		s.buf = buf
		if ok {
			r.found, r.next = r.h.store.LookupAll(key, r.now, r.found[:0]), 0
		}
	}
}

// readRequest fills ev from the auth subrequest.
func (h *Handler) readRequest(r *http1.Request, ev *characteristics.Event) error {
	var ipv, port, method, uri string
	for _, f := range r.Headers {
		switch f.Name {
		case hClientIP:
			ipv = f.Value
			continue
		case hClientPort:
			port = f.Value
			continue
		case hMethod:
			method = f.Value
			continue
		case hURI:
			uri = f.Value
			continue
		case "user-agent":
			if ev.UserAgent == "" {
				ev.UserAgent = f.Value
			}
		case "referer":
			if ev.Referer == "" {
				ev.Referer = f.Value
			}
		case "cookie":
			ev.Cookies = appendCookies(ev.Cookies, f.Value)
		}
		ev.Headers = append(ev.Headers, characteristics.Field{Name: f.Name, Value: f.Value})
	}
	ip, err := netip.ParseAddr(ipv)
	if err != nil {
		return ErrNoClient
	}
	ev.IP = ip
	ev.Port = parsePort(port)
	ev.Method = method
	if ev.Method == "" {
		ev.Method = r.Method
	}
	if uri == "" {
		uri = r.Target
	}
	ev.Path, ev.Query, _ = strings.Cut(uri, "?")
	ev.Host = r.Host
	return nil
}

// parsePort reads a port number, 0 if p is not one. strconv would allocate
// an error for every request without X-Real-Port.
func parsePort(p string) uint16 {
	if p == "" || len(p) > 5 {
		return 0
	}
	n := 0
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return 0
		}
		n = n*10 + int(p[i]-'0')
	}
	if n > 65535 {
		return 0
	}
	return uint16(n)
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
func (h *Handler) deny(w *http1.Response, d Decision, s *scratch) {
	s.buf = appendEncoded(s.buf[:0], d)
	w.AddHeader(HeaderDecision, s.buf)
	w.SetStatus(http.StatusUnauthorized)
}

// encode writes the decision as "action;retry=N;rule=NAME;q=LIMIT;w=SECONDS".
func encode(d Decision) string { return string(appendEncoded(nil, d)) }

func appendEncoded(b []byte, d Decision) []byte {
	action := d.Action.String()
	switch {
	case d.Shed:
		action = "shed"
	case d.Solved:
		action = "clearance"
	case d.Reserved:
		action = "reserved"
	}
	b = append(b, action...)
	b = append(b, ";retry="...)
	b = strconv.AppendInt(b, retrySeconds(d.Retry), 10)
	if d.Rule != "" {
		b = append(b, ";rule="...)
		b = appendHeaderSafe(b, d.Rule)
	}
	if d.Limit > 0 {
		b = append(b, ";q="...)
		b = strconv.AppendFloat(b, d.Limit, 'f', -1, 64)
		b = append(b, ";w="...)
		b = strconv.AppendInt(b, int64(d.Window/time.Second), 10)
	}
	if len(d.Token) > 0 {
		// base64url: no ';' to escape.
		if d.Solved {
			b = append(b, ";k="...)
		} else {
			b = append(b, ";tier="...)
			b = append(b, d.Tier.String()...)
			b = append(b, ";d="...)
			b = strconv.AppendInt(b, int64(d.Difficulty), 10)
			b = append(b, ";c="...)
		}
		b = append(b, d.Token...)
	}
	return b
}

// appendHeaderSafe keeps a rule name from breaking the header line or the
// decision's own syntax.
func appendHeaderSafe(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || c == ';' {
			c = '_'
		}
		b = append(b, c)
	}
	return b
}

// retrySeconds rounds up: a client told 0 would come straight back.
func retrySeconds(d time.Duration) int64 {
	return max(1, int64(math.Ceil(d.Seconds())))
}

type parsedDecision struct {
	action mitigation.Action
	shed   bool
	// reserved: a request under challenge.PathPrefix that is not the
	// solve endpoint; answered 404.
	reserved bool
	rule     string
	retry    int64
	q        string
	w        int64
	// A challenge's: the token (a challenge, or the clearance when solved).
	token      string
	solved     bool
	tier       rules.ChallengeTier
	difficulty int
}

func parseDecision(s string) (parsedDecision, error) {
	var p parsedDecision
	parts := strings.Split(s, ";")
	switch parts[0] {
	case "shed":
		p.shed = true
	case "reserved":
		p.reserved = true
	case "clearance":
		p.action = mitigation.ActionChallenge // solved: k= must follow
	default:
		a, err := mitigation.ParseAction(parts[0])
		if err != nil || a == mitigation.ActionLog {
			return p, fmt.Errorf("decision: unknown action %q", parts[0])
		}
		p.action = a
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
		case "c", "k":
			if len(v) > challenge.MaxChallengeLen {
				return p, fmt.Errorf("decision: %s too long", k)
			}
			p.token, p.solved = v, k == "k"
		case "tier":
			t, err := rules.ParseChallengeTier(v)
			if err != nil {
				return p, fmt.Errorf("decision: %w", err)
			}
			p.tier = t
		case "d":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > rules.MaxChallengeDifficulty {
				return p, fmt.Errorf("decision: d %q", v)
			}
			p.difficulty = n
		}
	}
	if parts[0] == "clearance" && !p.solved {
		return p, errors.New("decision: clearance without k")
	}
	return p, nil
}

// respond renders the answer the client gets for a denied request.
func (h *Handler) respond(w *http1.Response, r *http1.Request) {
	p, err := parseDecision(r.Get(hDecision))
	if err != nil {
		// Only nginx calls this; a missing decision is a configuration error.
		h.log.Warn("decision: respond without a valid decision", "err", err)
		http.Error(w, "Forbidden", http.StatusForbidden)
		return
	}
	method := r.Get(hMethod)
	if method == "" {
		method = r.Method
	}
	uri := r.Get(hURI)
	if uri == "" {
		uri = r.Target
	}
	hd := w.Header()
	if p.action != mitigation.ActionShadowBan {
		// A refusal must not be cached; a shadow-ban answer carries only
		// what the application's would (see shadowban.Config.Headers).
		hd.Set("Cache-Control", "no-store")
	}
	retry := strconv.FormatInt(p.retry, 10)
	if p.shed {
		hd.Set("Retry-After", retry)
		http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
		return
	}
	if p.reserved {
		http.NotFound(w, nil)
		return
	}
	if p.action == mitigation.ActionChallenge && h.respondChallenge(w, r, p, uri) {
		return
	}
	if p.solved { // a clearance without a Gate to set it
		http.Error(w, "Forbidden", http.StatusForbidden)
		return
	}
	switch p.action {
	case mitigation.ActionBlock, mitigation.ActionFirewall:
		http.Error(w, "Forbidden", http.StatusForbidden)
	case mitigation.ActionRateLimit, mitigation.ActionThrottle, mitigation.ActionChallenge:
		// A challenge without a page (no challenge.Gate) is answered as
		// its default fallback; see DESIGN.md "Challenges".
		// draft-ietf-httpapi-ratelimit-headers-11: the current state
		// (nothing left, reset in t) always; the policy (quota per window)
		// when a rule set one (a manual mitigation has none).
		hd.Set("Retry-After", retry)
		hd.Set("RateLimit", fmt.Sprintf(`"%s";r=0;t=%s`, policyName(p.rule), retry))
		if p.q != "" && p.w > 0 {
			hd.Set("RateLimit-Policy", fmt.Sprintf(`"%s";q=%s;w=%d`, policyName(p.rule), p.q, p.w))
		} else if p.q != "" {
			hd.Set("RateLimit-Policy", fmt.Sprintf(`"%s";q=%s`, policyName(p.rule), p.q))
		}
		http.Error(w, "Too Many Requests", http.StatusTooManyRequests)
	case mitigation.ActionShadowBan:
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
	decisions [numOutcomes]prometheus.Counter
	duration  prometheus.Histogram
	invalid   prometheus.Counter
}

type outcome int

const (
	outcomeAllow outcome = iota
	outcomeBlock
	outcomeRateLimit
	outcomeShadowBan
	outcomeFirewall
	outcomeThrottle
	outcomeChallenge
	outcomeShed
	outcomeInvalid
	numOutcomes
)

var outcomes = [numOutcomes]string{"allow", "block", "rate_limit", "shadowban", "firewall", "throttle", "challenge", "shed", "invalid"}

func outcomeOf(a mitigation.Action) outcome {
	switch a {
	case mitigation.ActionBlock:
		return outcomeBlock
	case mitigation.ActionRateLimit:
		return outcomeRateLimit
	case mitigation.ActionShadowBan:
		return outcomeShadowBan
	case mitigation.ActionFirewall:
		return outcomeFirewall
	case mitigation.ActionThrottle:
		return outcomeThrottle
	case mitigation.ActionChallenge:
		return outcomeChallenge
	}
	return outcomeAllow
}

func newMetrics(reg prometheus.Registerer) *metrics {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "guardd_decision_requests_total", Help: "Decisions made for nginx, by outcome."}, []string{"outcome"})
	m := &metrics{
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "guardd_decision_duration_seconds", Help: "Time to decide, from request read to answer.",
			Buckets: []float64{0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.01}}),
		invalid: prometheus.NewCounter(prometheus.CounterOpts{Name: "guardd_decision_invalid_requests_total", Help: "Decide requests without a readable client address, allowed."}),
	}
	for i, o := range outcomes {
		m.decisions[i] = vec.WithLabelValues(o)
	}
	if reg != nil {
		reg.MustRegister(vec, m.duration, m.invalid)
	}
	return m
}

func (m *metrics) observe(o outcome, start time.Time) {
	m.decisions[o].Inc()
	if o == outcomeInvalid {
		m.invalid.Inc()
	}
	m.duration.Observe(time.Since(start).Seconds())
}

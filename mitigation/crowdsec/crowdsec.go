package crowdsec

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/guardd/guardd/mitigation"
)

// Store is what the server reads from mitigation.Store.
type Store interface {
	Snapshot(now time.Time) ([]mitigation.Mitigation, uint64)
	Changes(since uint64) (added, deleted []mitigation.Mitigation, cursor uint64, ok bool)
}

// Decision types bouncers know. The firewall bouncer acts on "ban" only
// (its supported_decisions_types); nginx, Traefik and HAProxy bouncers show a
// captcha for "captcha" and fall back to their fallback_remediation (ban by
// default) for a type they do not know, which is why "throttle" is not used.
const (
	TypeBan     = "ban"
	TypeCaptcha = "captcha"
)

// Config configures a Server. The zero value needs only KeyFile.
type Config struct {
	// KeyFile holds the registered bouncers' key hashes (see AddBouncer):
	// <state_dir>/crowdsec-bouncers.json (KeyFileName), set by the daemon
	// from mitigation.state_dir, where `guardd bouncers` writes. It is
	// reread when it changes, so `guardd bouncers add` takes effect at the
	// bouncer's next poll. Required.
	KeyFile string `yaml:"-"`
	// Types maps guardd actions to CrowdSec decision types; an action mapped
	// to "" is not shown to bouncers. Default: block and firewall -> ban,
	// rate_limit -> captcha; shadowban and log are not shown (a bouncer could
	// only reveal a shadow-ban by refusing the client). Only "ban" and
	// "captcha" are accepted.
	Types map[string]string `yaml:"types"`
	// History is how many value changes the server replays to a bouncer
	// behind by that many; one further behind gets a full diff. Default 65536.
	History int `yaml:"history"`
	// MaxBouncers caps the per-bouncer states held (one per key that has
	// polled); default 1024. Keys are registered by the operator, so this
	// only bounds a misconfiguration.
	MaxBouncers int `yaml:"max_bouncers"`
	// Scopes are the scopes sent to a bouncer whose request names none
	// ("ip", "range"); default both. Debian 12's firewall bouncer (0.0.25)
	// sends none and stores a Range as its first address only: ["ip"]
	// keeps ranges from it (docs/firewall.md).
	Scopes []string `yaml:"scopes"`
	// Now is the wall clock; nil means time.Now.
	Now func() time.Time `yaml:"-"`
}

// Server serves CrowdSec's bouncer API (GET /v1/decisions/stream and GET
// /v1/decisions) from a Store. It is an http.Handler; it starts nothing.
type Server struct {
	store   Store
	now     func() time.Time
	log     *slog.Logger
	types   [8]uint8 // by mitigation.Action: typeNone, typeBan, typeCaptcha
	maxBncr int
	metrics *metrics
	scopeIP bool // default scopes
	scopeRg bool

	mu       sync.Mutex
	keys     keyring
	view     view
	bouncers map[string]*bouncer
}

const (
	typeNone uint8 = iota
	typeCaptcha
	typeBan // higher wins on one value
)

var typeNames = [...]string{typeNone: "", typeCaptcha: TypeCaptcha, typeBan: TypeBan}

// New validates cfg and returns a Server reading store. A nil reg registers
// no metrics; a nil log discards.
func New(cfg Config, store Store, reg prometheus.Registerer, log *slog.Logger) (*Server, error) {
	if store == nil {
		return nil, fmt.Errorf("crowdsec: nil store")
	}
	if cfg.KeyFile == "" {
		return nil, fmt.Errorf("crowdsec: key_file: required (conventionally <state_dir>/%s)", KeyFileName)
	}
	if cfg.History < 0 || cfg.MaxBouncers < 0 {
		return nil, fmt.Errorf("crowdsec: history and max_bouncers: want 0 (default) or more")
	}
	s := &Server{store: store, now: cfg.Now, log: log, maxBncr: cfg.MaxBouncers, bouncers: map[string]*bouncer{}}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.maxBncr == 0 {
		s.maxBncr = 1024
	}
	s.types[mitigation.ActionBlock] = typeBan
	s.types[mitigation.ActionFirewall] = typeBan
	s.types[mitigation.ActionRateLimit] = typeCaptcha
	s.types[mitigation.ActionChallenge] = typeCaptcha
	for a, t := range cfg.Types {
		act, err := mitigation.ParseAction(a)
		if err != nil {
			return nil, fmt.Errorf("crowdsec: types: %w", err)
		}
		switch t {
		case "":
			s.types[act] = typeNone
		case TypeBan:
			s.types[act] = typeBan
		case TypeCaptcha:
			s.types[act] = typeCaptcha
		default:
			return nil, fmt.Errorf("crowdsec: types: %s: unknown decision type %q; expect 'ban', 'captcha' or '' (not shown)", a, t)
		}
	}
	s.scopeIP, s.scopeRg = len(cfg.Scopes) == 0, len(cfg.Scopes) == 0
	for i, sc := range cfg.Scopes {
		switch strings.ToLower(sc) {
		case "ip":
			s.scopeIP = true
		case "range":
			s.scopeRg = true
		default:
			return nil, fmt.Errorf("crowdsec: scopes[%d]: %q; expect 'ip' or 'range'", i, sc)
		}
	}
	h := cfg.History
	if h == 0 {
		h = 1 << 16
	}
	s.view.init(h)
	s.keys.path = cfg.KeyFile
	s.metrics = newMetrics(reg)
	return s, nil
}

// ServeHTTP implements http.Handler for GET /v1/decisions/stream and GET
// /v1/decisions (with or without a trailing slash, as bouncers send both).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var ep endpoint
	switch strings.TrimSuffix(r.URL.Path, "/") {
	case "/v1/decisions/stream":
		ep = endpointStream
	case "/v1/decisions":
		ep = endpointQuery
	default:
		s.metrics.request(endpointOther, resultNotFound)
		writeError(w, http.StatusNotFound, "not found")
		return
	}
	if r.Method != http.MethodGet {
		// Not even HEAD: a poll moves the bouncer's cursor.
		s.metrics.request(ep, resultBadRequest)
		w.Header().Set("Allow", "GET")
		writeError(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	q := r.URL.Query()
	now := s.now()
	s.mu.Lock()
	if err := s.keys.reloadLocked(); err != nil {
		s.log.Error("crowdsec: keeping previous bouncer keys", "err", err)
	}
	name, ok := s.keys.lookupLocked(r.Header.Get("X-Api-Key"))
	if !ok {
		s.mu.Unlock()
		s.metrics.request(ep, resultForbidden)
		// CrowdSec answers an unknown or missing key with 403 and this body.
		writeError(w, http.StatusForbidden, "access forbidden")
		return
	}
	s.syncLocked(now)
	var body []byte
	var err error
	if ep == endpointStream {
		body, err = s.streamLocked(name, q, now)
	} else {
		body, err = s.queryLocked(q, now)
	}
	s.mu.Unlock()
	if err != nil {
		s.metrics.request(ep, resultBadRequest)
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.metrics.request(ep, resultOK)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Write(body)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	b := append([]byte(`{"message":`), appendJSONString(nil, msg)...)
	w.Write(append(b, "}\n"...))
}

// filter is what a stream request asks for.
type filter struct {
	ip, rng        bool
	origins        []string
	scenarios, not []string
}

func (s *Server) parseFilter(q map[string][]string) filter {
	f := filter{ip: s.scopeIP, rng: s.scopeRg}
	if v, ok := q["scopes"]; ok {
		f.ip, f.rng = false, false
		for _, s := range splitList(v) {
			switch strings.ToLower(s) {
			case "ip":
				f.ip = true
			case "range":
				f.rng = true
			}
		}
	}
	f.origins = splitList(q["origins"])
	f.scenarios = splitList(q["scenarios_containing"])
	f.not = splitList(q["scenarios_not_containing"])
	return f
}

func splitList(v []string) []string {
	var out []string
	for _, s := range v {
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

func (f *filter) match(d *decision) bool {
	if d.rng && !f.rng || !d.rng && !f.ip {
		return false
	}
	if len(f.origins) > 0 {
		ok := false
		for _, o := range f.origins {
			if strings.EqualFold(o, d.origin) || strings.EqualFold(o, d.guarddOrigin) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if len(f.scenarios) > 0 {
		ok := false
		for _, s := range f.scenarios {
			if strings.Contains(d.rule, s) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	for _, s := range f.not {
		if strings.Contains(d.rule, s) {
			return false
		}
	}
	return true
}

// decision is what a bouncer is told about one value.
type decision struct {
	id           uint64
	typ          uint8
	rng          bool // Range scope, else Ip
	value        string
	rule         string
	origin       string // CrowdSec's vocabulary: crowdsec (rules) or cscli (operator)
	guarddOrigin string
	expires      time.Time
	pfx          netip.Prefix
}

// crowdsecOrigin names guardd's origins in the words bouncers filter on:
// a rule is the detection engine ("crowdsec"), a person is "cscli".
func crowdsecOrigin(o mitigation.Origin) string {
	if o == "" || o == mitigation.OriginRule {
		return "crowdsec"
	}
	return "cscli"
}

// toDecision maps a mitigation to what bouncers see, or false when it is not
// shown: an action mapped to no type, or a scope other than one ip.src or
// one ip.src.prefix pair (a ban on the address of an {ip.src, http.path}
// scope would refuse the client everywhere).
func (s *Server) toDecision(m *mitigation.Mitigation) (decision, bool) {
	if len(m.Scope) != 1 || int(m.Action) >= len(s.types) || s.types[m.Action] == typeNone {
		return decision{}, false
	}
	d := decision{id: m.ID, typ: s.types[m.Action], rule: m.Rule, origin: crowdsecOrigin(m.Origin), guarddOrigin: string(m.Origin), expires: m.Expires}
	pfx, ok := mitigation.Network(m.Scope[0])
	if !ok {
		return decision{}, false
	}
	d.pfx, d.value, d.rng = pfx, pfx.String(), m.Scope[0].Name == "ip.src.prefix"
	if !d.rng {
		d.value = pfx.Addr().String()
	}
	return d, true
}

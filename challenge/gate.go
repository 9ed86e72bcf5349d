package challenge

import (
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/rules"
)

// Reserved paths. Everything under PathPrefix is guardd's: the decision API
// answers it itself (through nginx's @guardd location) and never lets it
// reach the application.
const (
	PathPrefix = "/.guardd/"
	SolvePath  = PathPrefix + "solve"
)

// Defaults of Config's zero values.
const (
	DefaultCookie       = "guardd_clearance"
	DefaultClearanceTTL = 24 * time.Hour
	DefaultChallengeTTL = 10 * time.Minute
	// DefaultDifficulty is the proof of work's leading zero bits: about
	// 2^18 SHA-256 hashes on average: page to application in 0.4s to 0.8s
	// (medians; 0.15s to 2.7s)
	// in headless Chromium on a 2-core machine (docs/rules.md).
	DefaultDifficulty     = 18
	DefaultMaxUnsolved    = 5
	DefaultShareAddresses = 8 // at most shareAddrs-1
	// DefaultTrackerSlots sizes the sharing and escalation tables.
	DefaultTrackerSlots = 1 << 17
)

// Escalator is told when a client is to be refused outright: it was shown
// MaxUnsolved challenges without passing one (ReasonUnsolved), or it sent a
// proof of work that does not hold (ReasonBadProof). The daemon makes a
// block mitigation of it. Called synchronously from the decision; it must
// not block.
type Escalator interface {
	Escalate(ev *characteristics.Event, rule string, reason Reason, now time.Time)
}

// Config configures a Gate. Zero values mean the defaults above.
type Config struct {
	Keys *Keyring // required
	// Cookie is the clearance cookie's name.
	Cookie string
	// ClearanceTTL is how long a passed challenge clears its client.
	ClearanceTTL time.Duration
	// ChallengeTTL is how long a page's challenge may be solved.
	ChallengeTTL time.Duration
	// Difficulty is the proof of work's leading zero bits for a rule that
	// sets no challenge_difficulty.
	Difficulty int
	// MaxUnsolved is how many challenges an address is shown without
	// passing one before it is escalated; negative: never.
	MaxUnsolved int
	// ShareAddresses is how many distinct addresses may present one
	// clearance before it is revoked.
	ShareAddresses int
	// TrackerSlots bounds the sharing and escalation tables (entries each).
	TrackerSlots int
	Escalator    Escalator // nil: nothing is escalated
	Registerer   prometheus.Registerer
	Logger       *slog.Logger
}

// Gate issues challenges, checks their solutions, and checks clearances.
// Safe for concurrent use.
type Gate struct {
	keys         *Keyring
	cookie       string
	clearanceTTL time.Duration
	challengeTTL time.Duration
	difficulty   int
	maxUnsolved  int
	esc          Escalator
	share        *shareTracker
	unsolved     *unsolvedTracker
	log          *slog.Logger
	m            *metrics
	rngMu        sync.Mutex
	rng          *rand.ChaCha8
}

// New validates cfg.
func New(cfg Config) (*Gate, error) {
	if cfg.Keys == nil {
		return nil, errors.New("challenge: no keys")
	}
	g := &Gate{keys: cfg.Keys, cookie: cfg.Cookie, clearanceTTL: cfg.ClearanceTTL, challengeTTL: cfg.ChallengeTTL, difficulty: cfg.Difficulty,
		maxUnsolved: cfg.MaxUnsolved, esc: cfg.Escalator, log: cfg.Logger}
	if g.cookie == "" {
		g.cookie = DefaultCookie
	}
	if !validCookieName(g.cookie) {
		return nil, fmt.Errorf("challenge: cookie name %q: want letters, digits, '-' and '_'", g.cookie)
	}
	if g.clearanceTTL == 0 {
		g.clearanceTTL = DefaultClearanceTTL
	}
	if g.challengeTTL == 0 {
		g.challengeTTL = DefaultChallengeTTL
	}
	if g.clearanceTTL < 0 || g.challengeTTL < 0 {
		return nil, errors.New("challenge: negative TTL")
	}
	if g.difficulty == 0 {
		g.difficulty = DefaultDifficulty
	}
	if g.difficulty < 1 || g.difficulty > rules.MaxChallengeDifficulty {
		return nil, fmt.Errorf("challenge: difficulty %d: want 1 to %d", g.difficulty, rules.MaxChallengeDifficulty)
	}
	if g.maxUnsolved == 0 {
		g.maxUnsolved = DefaultMaxUnsolved
	}
	share := cfg.ShareAddresses
	if share == 0 {
		share = DefaultShareAddresses
	}
	if share < 1 || share >= shareAddrs {
		return nil, fmt.Errorf("challenge: share addresses %d: want 1 to %d", share, shareAddrs-1)
	}
	slots := cfg.TrackerSlots
	if slots == 0 {
		slots = DefaultTrackerSlots
	}
	if slots < 0 {
		return nil, errors.New("challenge: negative tracker slots")
	}
	g.share = newShareTracker(slots, share)
	g.unsolved = newUnsolvedTracker(slots, g.clearanceTTL)
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	var seed [32]byte
	crand.Read(seed[:])
	g.rng = rand.NewChaCha8(seed)
	g.m = newMetrics(cfg.Registerer)
	return g, nil
}

func validCookieName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return s != ""
}

// SetRules names the rules whose challenges are counted under their own
// name in the metrics; others are counted as "other". Call it on every
// rule load.
func (g *Gate) SetRules(names []string) { g.m.setRules(names) }

// CookieName is the clearance cookie's name.
func (g *Gate) CookieName() string { return g.cookie }

// Difficulty is the difficulty of a rule that sets d (0: the default).
func (g *Gate) Difficulty(d int) int {
	if d <= 0 {
		return g.difficulty
	}
	return d
}

func subjectOf(ev *characteristics.Event) Subject {
	return Subject{IP: ev.IP, UserAgent: ev.UserAgent, JA4: ev.TLS.JA4}
}

// Cleared reports whether ev carries a valid clearance for its network,
// User-Agent (and JA4, when the clearance binds one) at now: the check the
// decision makes before challenging. It allocates nothing and looks up no
// store, only the bounded in-memory table that revokes shared clearances.
func (g *Gate) Cleared(ev *characteristics.Event, now time.Time) bool {
	for i := range ev.Cookies {
		c := &ev.Cookies[i]
		if c.Name != g.cookie {
			continue
		}
		id, exp, owner, r := verifyClearance(g.keys, c.Value, subjectOf(ev), now)
		if id != 0 && r != ReasonExpired {
			// Signed by us and current: whether or not it binds this
			// client, count where else it is presented from.
			var revoked bool
			if owner == addr32(ev.IP) {
				revoked = g.share.isRevoked(id, now)
			} else {
				revoked = g.share.see(id, exp, ev.IP, now)
			}
			if revoked && r == ReasonOK {
				r = ReasonRevoked
			}
		}
		g.m.clearance[r].Inc()
		if r == ReasonOK {
			return true
		}
	}
	return false
}

// Shown counts a challenge page shown to ev's client for rule and reports
// whether the client has now been shown MaxUnsolved without passing: it is
// then escalated (Config.Escalator) and its count starts again.
func (g *Gate) Shown(ev *characteristics.Event, rule string, now time.Time) (escalated bool) {
	g.m.shownFor(rule).Inc()
	if g.maxUnsolved < 0 {
		return false
	}
	if g.unsolved.shown(ev.IP, now) <= g.maxUnsolved {
		return false
	}
	g.unsolved.reset(ev.IP)
	g.m.failedFor(rule, ReasonUnsolved).Inc()
	g.escalate(ev, rule, ReasonUnsolved, now)
	return true
}

func (g *Gate) escalate(ev *characteristics.Event, rule string, r Reason, now time.Time) {
	if g.esc == nil {
		return
	}
	g.log.Info("challenge: client escalated", "client", ev.IP, "rule", rule, "reason", r.String())
	g.esc.Escalate(ev, rule, r, now)
}

func (g *Gate) random() uint64 {
	g.rngMu.Lock()
	v := g.rng.Uint64()
	g.rngMu.Unlock()
	return v | 1 // 0 means "no clearance" to the trackers
}

// AppendChallenge signs the challenge of a page shown to ev's client for
// rule and appends it (base64url) to dst. returnURL is where the client
// goes once it passes (ReturnURL of the request's URI).
func (g *Gate) AppendChallenge(dst []byte, ev *characteristics.Event, rule string, ch rules.Challenge, returnURL string, now time.Time) []byte {
	spec := challengeSpec{tier: ch.Tier, rule: rule, returnURL: returnURL}
	if ch.Tier == rules.TierProofOfWork {
		spec.difficulty = g.Difficulty(ch.Difficulty)
	}
	return appendChallenge(dst, g.keys.current(), subjectOf(ev), spec, g.random(), now)
}

// ReturnURL is where a client that passes goes back to: the URI it asked
// for when it is a local path, "/" otherwise (never another site).
func ReturnURL(uri string) string {
	if len(uri) == 0 || len(uri) > 4096 || uri[0] != '/' || strings.HasPrefix(uri, "//") || strings.HasPrefix(uri, "/\\") || strings.HasPrefix(uri, PathPrefix) {
		return "/"
	}
	for i := 0; i < len(uri); i++ {
		if uri[i] < 0x21 || uri[i] == 0x7f || uri[i] == '\\' {
			return "/"
		}
	}
	return uri
}

// Solution is what a request to SolvePath carries.
type Solution struct {
	Challenge string // c: the challenge the page was given
	Counter   string // n: the proof of work's counter ("" for the cookie tier)
	Return    string // r: the URL the page returns to, as ReturnURL made it
}

// ParseSolution reads a solve request's query.
func ParseSolution(query string) (Solution, error) {
	v, err := url.ParseQuery(query)
	if err != nil {
		return Solution{}, fmt.Errorf("challenge: solve query: %w", err)
	}
	s := Solution{Challenge: v.Get("c"), Counter: v.Get("n"), Return: v.Get("r")}
	if s.Challenge == "" || len(s.Challenge) > MaxChallengeLen {
		return Solution{}, errors.New("challenge: solve query: no valid challenge")
	}
	if len(s.Counter) > maxCounter {
		return Solution{}, errors.New("challenge: solve query: counter too long")
	}
	if ReturnURL(s.Return) != s.Return {
		s.Return = "/"
	}
	return s, nil
}

// SolveURL is the URL the page sends a solution to.
func SolveURL(challenge, counter, returnURL string) string {
	u := SolvePath + "?c=" + challenge
	if counter != "" {
		u += "&n=" + counter
	}
	return u + "&r=" + url.QueryEscape(returnURL)
}

// Outcome is what a solve request concluded.
type Outcome struct {
	Reason Reason // ReasonOK: passed
	Rule   string // the challenge's rule, when its signature held
	// Clearance is the cookie value to set when the client passed.
	Clearance string
	// Return is where to send the client: on to it when it passed, to a
	// new challenge for it otherwise.
	Return string
	// Tier and Difficulty are the challenge's, for a new one.
	Tier       rules.ChallengeTier
	Difficulty int
	// Escalated: the client sent a proof of work that does not hold and
	// was handed to the Escalator.
	Escalated bool
}

// Solve checks the solution a request to SolvePath carries and, when it
// holds, signs a clearance for the client until now+ClearanceTTL. A proof of
// work that does not hold escalates the client; an expired or foreign
// challenge only fails (a tab left open, a changed network).
func (g *Gate) Solve(ev *characteristics.Event, now time.Time) Outcome {
	sol, err := ParseSolution(ev.Query)
	if err != nil {
		g.m.failedFor("", ReasonMalformed).Inc()
		return Outcome{Reason: ReasonMalformed, Return: "/"}
	}
	s, r := verifyChallenge(g.keys, sol.Challenge, sol.Counter, subjectOf(ev), sol.Return, now, g.challengeTTL)
	o := Outcome{Reason: r, Rule: s.rule, Return: sol.Return, Tier: s.tier, Difficulty: s.difficulty}
	if r != ReasonOK {
		g.m.failedFor(s.rule, r).Inc()
		if r == ReasonBadProof {
			o.Escalated = g.esc != nil
			g.escalate(ev, s.rule, r, now)
		}
		return o
	}
	var id [8]byte
	crand.Read(id[:])
	o.Clearance = string(appendClearance(nil, g.keys.current(), subjectOf(ev), binary.BigEndian.Uint64(id[:])|1, now.Add(g.clearanceTTL)))
	g.unsolved.reset(ev.IP)
	g.m.passedFor(s.rule).Inc()
	return o
}

// IssueClearance signs a clearance for sub until now+ClearanceTTL, as a
// passed challenge does (tests and tools).
func (g *Gate) IssueClearance(sub Subject, now time.Time) string {
	return string(appendClearance(nil, g.keys.current(), sub, g.random(), now.Add(g.clearanceTTL)))
}

// SetCookie sets the clearance cookie on h: HttpOnly, SameSite=Lax, Path=/,
// Secure when the request came over HTTPS, expiring with the clearance.
func (g *Gate) SetCookie(h http.Header, clearance string, secure bool) {
	c := http.Cookie{Name: g.cookie, Value: clearance, Path: "/", MaxAge: int(g.clearanceTTL / time.Second), HttpOnly: true, Secure: secure, SameSite: http.SameSiteLaxMode}
	h.Add("Set-Cookie", c.String())
}

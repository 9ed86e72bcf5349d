package throttle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/counting"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/rules"
	"github.com/guardd/guardd/rules/engine"
)

// Counter counts one throttle rule's requests per key and judges them under
// the rule's limit. *counting.Table is one; a fleet-wide tier (local counts
// plus flushed deltas) is another. Admit records the request only when it
// fits under the limit (a refused request costs the client nothing, as in
// nginx limit_req or GCRA), and must be safe for concurrent use, must not
// block on the network, and should not allocate: it runs on the decision
// API's event loops, once per matching rule per request.
//
// key is the XXH64 hash of the rule's characteristic values (counting.Hash
// over the values each followed by 0xff), the same on every node; n is the
// request's size (1, or the rule's score); now is the request's time in
// unix nanoseconds. The Result's Exceeded, Remaining, RetryAfter and Reset
// become the answer and its headers.
type Counter interface {
	Admit(key uint64, n float64, now int64) counting.Result
}

// NewCounter makes the Counter of one throttle rule whose limit is l.
// Config.NewCounter nil means a local counting.Table of Config.MaxKeys.
type NewCounter func(r *rules.Rule, l counting.Limit) (Counter, error)

// Config configures a Limiter. The zero value is usable.
type Config struct {
	// NewCounter makes each rule's counter; nil: local counting.Tables.
	NewCounter NewCounter
	// MaxKeys caps each local table; 0 means counting's default.
	MaxKeys int
	// Shadow puts every throttle rule in shadow mode: counted and decided,
	// never enforced. A rule's own shadow: true does the same for it.
	Shadow bool
	// Shedding sheds the least important traffic classes while the
	// upstream is overloaded; no classes: off.
	Shedding ShedConfig
	// InFlightTimeout: a request counted by a concurrency rule is taken to
	// be done after this long if its log line has not come; 0 means 1m
	// (nginx's default proxy_read_timeout).
	InFlightTimeout time.Duration
	// MaxInFlight caps the requests tracked in flight; beyond it a request
	// is admitted without being counted. 0 means 1<<20.
	MaxInFlight int
	Registerer  prometheus.Registerer
	Logger      *slog.Logger
}

// Limiter builds the request-time limits of a rule set, keeping each rule's
// counts across reloads while its limit is unchanged.
type Limiter struct {
	cfg      Config
	log      *slog.Logger
	mu       sync.Mutex
	last     *Rules // the counters of the last Build, reused by the next
	m        *metrics
	inflight *inflight
	shed     *shedder       // nil: no shedding
	denied   *counting.Seen // with shedding: IDs of requests guardd refused
}

// New validates cfg and registers the metrics. It starts nothing: Run
// sweeps the requests in flight and moves the shedding level.
func New(cfg Config) (*Limiter, error) {
	if cfg.MaxKeys < 0 || cfg.InFlightTimeout < 0 || cfg.MaxInFlight < 0 {
		return nil, errors.New("throttle: negative MaxKeys, InFlightTimeout or MaxInFlight")
	}
	if cfg.InFlightTimeout == 0 {
		cfg.InFlightTimeout = time.Minute
	}
	if cfg.MaxInFlight == 0 {
		cfg.MaxInFlight = 1 << 20
	}
	sc, err := cfg.Shedding.withDefaults()
	if err != nil {
		return nil, err
	}
	l := &Limiter{cfg: cfg, log: cfg.Logger, inflight: newInflight(cfg.InFlightTimeout, cfg.MaxInFlight)}
	if len(sc.Classes) > 0 {
		l.shed = &shedder{cfg: sc}
		// guardd's own refusals (429, 503, 403) are no sign of an
		// overloaded upstream: their log lines are left out of the signals.
		if l.denied, err = counting.NewSeen(1<<18, cfg.InFlightTimeout); err != nil {
			return nil, err
		}
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if l.m, err = newMetrics(cfg.Registerer, l); err != nil {
		return nil, err
	}
	return l, nil
}

// Observe takes one access log line: the request with its $request_id
// (log variable request_id) gives back what it held in flight, and its
// status and request time feed the shedder. Safe for concurrent use.
func (l *Limiter) Observe(ev *characteristics.Event) {
	if id, ok := ev.Var("request_id"); ok && id != "" && id != "-" {
		l.inflight.release(counting.HashString(id), ev.Time.UnixNano())
	}
	if l.shed != nil {
		if id, ok := ev.Var("request_id"); ok && l.denied.Take(counting.HashString(id), ev.Time.UnixNano()) {
			return // answered by guardd, not the upstream
		}
		l.shed.observe(ev.Status, ev.RequestTime)
	}
}

// Denied tells the shedder that guardd refused the request ev (a throttle,
// a mitigation, shedding), so that its log line does not count as the
// upstream's answer. It does nothing without shedding or a request ID.
func (l *Limiter) Denied(ev *characteristics.Event) {
	if l.denied == nil {
		return
	}
	if id, ok := ev.Header(requestIDHeader); ok && id != "" {
		l.denied.Add(counting.HashString(id), ev.Time.UnixNano())
	}
}

// Run sweeps the requests in flight whose log line never came and, with
// shedding on, moves the shedding level every interval, until ctx ends.
func (l *Limiter) Run(ctx context.Context) error {
	every := time.Second
	if l.shed != nil {
		every = l.shed.cfg.Interval
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-tick.C:
			l.Step(now)
		}
	}
}

// Step is one turn of Run at now.
func (l *Limiter) Step(now time.Time) {
	l.inflight.sweep(now.UnixNano())
	if l.shed == nil {
		return
	}
	level, sig, moved := l.shed.step(now.UnixNano(), l.inflight.stats().total)
	if moved {
		cls := l.shed.cfg.Classes
		var names []string
		for _, c := range cls[len(cls)-level:] {
			names = append(names, c.Name)
		}
		l.log.Warn("throttle: shedding level changed", "level", level, "shed", names,
			"latency_seconds", sig.latency, "error_rate", sig.errorRate, "in_flight", sig.inFlight)
	}
}

// Rules is the limiter's state for one rule set; it does not change once
// built, and a reload builds another.
type Rules struct {
	set     *rules.Set
	rules   []limitRule
	lim     *Limiter
	classes [][]int // per shedding class, the indices in set of its rules
	dflt    int     // the class of a request in no class
}

type limitRule struct {
	index   int // in set.Rules()
	rule    *rules.Rule
	limit   counting.Limit
	counter Counter // nil for a concurrency rule
	conc    int32   // concurrency limit; 0: a rate limit
	shadow  bool
	jitter  int64
	name    string // the rule's name, safe inside a structured-field string
	policy  []byte // `"name";q=Q;w=W`
	m       *ruleMetrics
}

// Build makes the limits of set's throttle rules. A rule whose name and
// limit were in the last Build keeps its counter, and so its counts.
func (l *Limiter) Build(set *rules.Set) (*Rules, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rs := &Rules{lim: l}
	if set == nil {
		l.last = rs
		return rs, nil
	}
	// Only the throttle rules and the shedding classes' rules are
	// evaluated on every request: a set of their own.
	classRule := map[string]bool{}
	if l.shed != nil {
		for _, c := range l.shed.cfg.Classes {
			for _, name := range c.Rules {
				classRule[name] = true
			}
		}
	}
	set = set.Select(func(r *rules.Rule) bool { return r.Action == mitigation.ActionThrottle || classRule[r.Name] })
	rs.set = set
	if l.shed != nil {
		index := map[string]int{}
		for i, r := range set.Rules() {
			index[r.Name] = i
		}
		for _, c := range l.shed.cfg.Classes {
			var idx []int
			for _, name := range c.Rules {
				i, ok := index[name]
				if !ok {
					return nil, fmt.Errorf("throttle: shedding class %s: no rule %q", c.Name, name)
				}
				idx = append(idx, i)
			}
			rs.classes = append(rs.classes, idx)
		}
		rs.dflt = len(rs.classes) - 1
		for c := len(rs.classes) - 1; c >= 0; c-- {
			if len(rs.classes[c]) == 0 {
				rs.dflt = c
			}
		}
	}
	for i, r := range set.Rules() {
		if r.Action != mitigation.ActionThrottle {
			continue
		}
		if r.Concurrency > 0 {
			lr := limitRule{index: i, rule: r, conc: int32(r.Concurrency), shadow: r.Shadow || l.cfg.Shadow,
				name: PolicyName(r.Name), m: l.m.rule(r.Name)}
			lr.policy = fmt.Appendf(nil, `"%s";q=%d`, lr.name, r.Concurrency)
			rs.rules = append(rs.rules, lr)
			continue
		}
		lim := counting.Limit{Algorithm: r.Algorithm, Period: r.Period, Requests: r.Requests, Burst: r.Burst}
		lr := limitRule{index: i, rule: r, limit: lim, shadow: r.Shadow || l.cfg.Shadow, jitter: int64(r.RetryJitter),
			name: PolicyName(r.Name), m: l.m.rule(r.Name)}
		if old := l.last.find(r.Name); old != nil && old.counter != nil && old.limit == lim {
			lr.counter = old.counter
		} else if c, err := l.newCounter(r, lim); err != nil {
			return nil, fmt.Errorf("throttle: rule %s: %w", r.Name, err)
		} else {
			lr.counter = c
		}
		lr.policy = AppendPolicy(nil, lr.name, lim)
		rs.rules = append(rs.rules, lr)
	}
	l.last = rs
	return rs, nil
}

// Reconfigure takes a reload's MaxKeys and Shadow; the next Build applies
// them. A changed MaxKeys gives every rule a new local table (its counts
// start afresh), as the rule engine's tables do on a reload; with
// Config.NewCounter set it is not read.
func (l *Limiter) Reconfigure(maxKeys int, shadow bool) error {
	if maxKeys < 0 {
		return errors.New("throttle: negative MaxKeys")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if maxKeys != l.cfg.MaxKeys && l.cfg.NewCounter == nil {
		l.last = nil
	}
	l.cfg.MaxKeys, l.cfg.Shadow = maxKeys, shadow
	return nil
}

func (l *Limiter) newCounter(r *rules.Rule, lim counting.Limit) (Counter, error) {
	if l.cfg.NewCounter != nil {
		return l.cfg.NewCounter(r, lim)
	}
	return counting.NewTable(counting.Config{Limit: lim, MaxKeys: l.cfg.MaxKeys})
}

func (rs *Rules) find(name string) *limitRule {
	if rs == nil {
		return nil
	}
	for i := range rs.rules {
		if rs.rules[i].rule.Name == name {
			return &rs.rules[i]
		}
	}
	return nil
}

// Set is the rules Decide needs, selected from the set rs was built from:
// the Matches handed to Decide must come from its Eval.
func (rs *Rules) Set() *rules.Set { return rs.set }

// Len is the number of throttle rules.
func (rs *Rules) Len() int {
	if rs == nil {
		return 0
	}
	return len(rs.rules)
}

// Active reports whether Decide has anything to do: throttle rules, or
// shedding.
func (rs *Rules) Active() bool { return rs != nil && (len(rs.rules) > 0 || rs.classes != nil) }

// Sweep drops the idle keys of the local counters (see counting.Table.Sweep).
func (rs *Rules) Sweep(now time.Time) {
	for i := range rs.rules {
		if s, ok := rs.rules[i].counter.(interface{ Sweep(int64) int }); ok && rs.rules[i].counter != nil {
			s.Sweep(now.UnixNano())
		}
	}
}

// Verdict is what the throttle rules say of one request.
type Verdict struct {
	// Matched: an enforced throttle rule counted the request, so the answer
	// carries RateLimit headers.
	Matched bool
	// Refused: an enforced throttle rule refused it (429).
	Refused bool
	// Shed: the shedder refused it (503); Retry is the shedder's hold.
	Shed bool
	// Rule is the rule that decides: of the refusing rules the one with
	// the longest wait, else of the matching rules the one with the least
	// remaining.
	Rule *rules.Rule
	// Remaining is what Rule leaves, in whole requests.
	Remaining int64
	// Retry is, when Refused, how long until Rule would admit the request
	// (the algorithm's exact wait, plus the rule's jitter).
	Retry time.Duration
	// Reset is how long until Rule's usage of this key is back to zero.
	Reset time.Duration

	policy []byte
	name   string
}

// Decide counts the request ev on the key of every throttle rule whose
// count expression holds in m (the Matches of rs.Set().Eval(ev)) and
// decides: all are counted, the most restrictive decides. Shadow rules are
// counted and judged, and a refusal they would have made is counted in
// guardd_throttle_requests_total{outcome="shadow_refused"} and logged, but
// they never refuse and add no headers. buf is scratch space for the keys;
// the grown buffer is returned. Decide allocates nothing once buf has grown
// and the counters hold their keys.
func (rs *Rules) Decide(ev *characteristics.Event, m *rules.Matches, now time.Time, buf []byte) (Verdict, []byte) {
	var v Verdict
	if rs == nil {
		return v, buf
	}
	if sh := rs.lim.shed; sh != nil && sh.level.Load() > 0 && sh.shed(rs.classOf(m)) {
		return Verdict{Shed: true, Retry: sh.cfg.Hold}, buf
	}
	t := now.UnixNano()
	var bestRemaining float64
	var reqID uint64
	for i := range rs.rules {
		lr := &rs.rules[i]
		if !m.Count(lr.index) {
			continue
		}
		r := lr.rule
		if lr.conc > 0 && reqID == 0 {
			id, ok := ev.Header(requestIDHeader)
			if !ok || id == "" {
				continue // no ID, no log line to release it: not counted
			}
			if reqID = counting.HashString(id); reqID == 0 {
				reqID = 1
			}
		}
		var key uint64
		var n float64
		var keyed bool
		if key, n, keyed, buf = lr.key(ev, buf); !keyed {
			continue
		}
		var res counting.Result
		if lr.conc > 0 {
			ok, c := rs.lim.inflight.acquire(reqID, r.Name, key, lr.conc, t)
			res = counting.Result{Count: float64(c), Remaining: float64(max(0, lr.conc-c))}
			if !ok {
				// When a request ends is not known: try again in a second.
				res.Exceeded, res.RetryAfter = true, time.Second
			}
		} else {
			res = lr.counter.Admit(key, n, t)
		}
		if lr.shadow {
			if res.Exceeded {
				lr.m.shadowRefused.Inc()
				rs.lim.logShadow(lr, ev, res, t)
			} else {
				lr.m.allowed.Inc()
			}
			continue
		}
		if res.Exceeded {
			lr.m.refused.Inc()
			retry := res.RetryAfter
			if lr.jitter > 0 {
				retry += time.Duration(rand.Int64N(lr.jitter + 1))
			}
			v.take(lr, res, retry, &bestRemaining)
			continue
		}
		lr.m.allowed.Inc()
		v.take(lr, res, 0, &bestRemaining)
	}
	return v, buf
}

// key is lr's key of ev, hashed from its characteristic values each
// followed by 0xff (buf is scratch space, returned grown), and the request's
// size: 1, or the rule's score. ok is false for a request the rule cannot
// count: a characteristic absent, or no positive score.
func (lr *limitRule) key(ev *characteristics.Event, buf []byte) (key uint64, n float64, ok bool, _ []byte) {
	r := lr.rule
	buf = buf[:0]
	for _, c := range r.Characteristics {
		if !c.Present(ev) {
			return 0, 0, false, buf // a request without the characteristic cannot be keyed
		}
		buf = engine.AppendKey(buf, c, ev)
	}
	n = 1
	if r.Score != nil {
		if n, ok = r.Score.Num(ev); !ok || !(n > 0) {
			return 0, 0, false, buf
		}
	}
	return counting.Hash(buf), n, true, buf
}

// take folds one enforced rule's result into v: most restrictive decides.
// Of the refusing rules the one with the longest wait (retry) decides, else
// of the admitting ones the one with the least remaining (best holds it).
func (v *Verdict) take(lr *limitRule, res counting.Result, retry time.Duration, best *float64) {
	r := lr.rule
	if res.Exceeded {
		if !v.Refused || retry > v.Retry {
			*v = Verdict{Matched: true, Refused: true, Rule: r, Retry: retry, Reset: res.Reset, policy: lr.policy, name: lr.name}
		}
		return
	}
	if v.Refused {
		return
	}
	if !v.Matched || res.Remaining < *best {
		*best = res.Remaining
		*v = Verdict{Matched: true, Rule: r, Remaining: int64(math.Floor(res.Remaining)), Reset: res.Reset, policy: lr.policy, name: lr.name}
	}
}

// requestIDHeader carries nginx's $request_id on the auth subrequest.
const requestIDHeader = "x-request-id"

// classOf is the shedding class of a request: the first whose rules' count
// expression holds, else the default class.
func (rs *Rules) classOf(m *rules.Matches) int {
	for c, idx := range rs.classes {
		for _, i := range idx {
			if m.Count(i) {
				return c
			}
		}
	}
	return rs.dflt
}

// logShadow logs a refusal a shadow rule would have made, at most once a
// second per rule (of now, the decision's time in Unix nanoseconds); the
// metric counts every one.
func (l *Limiter) logShadow(lr *limitRule, ev *characteristics.Event, res counting.Result, now int64) {
	last := lr.m.lastLog.Load()
	if now-last < int64(time.Second) || !lr.m.lastLog.CompareAndSwap(last, now) {
		return
	}
	l.log.Info("throttle: shadow rule would refuse", "rule", lr.rule.Name, "ip.src", ev.IP.String(), "path", ev.Path,
		"count", res.Count, "retry_after", res.RetryAfter.Seconds())
}

// Seconds rounds d up to whole seconds, at least 1: a client told 0 would
// come straight back, and one told less than the wait would be refused
// again.
func Seconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return max(1, s)
}

// RetrySeconds is Retry-After for a refused request.
func (v *Verdict) RetrySeconds() int64 { return Seconds(v.Retry) }

// AppendRateLimit appends the RateLimit field value of v:
// "<rule>";r=<remaining>;t=<seconds>, t being the wait for a refused
// request and the time to reset for an allowed one.
func (v *Verdict) AppendRateLimit(b []byte) []byte {
	b = append(b, '"')
	b = append(b, v.name...)
	b = append(b, `";r=`...)
	if v.Refused {
		b = append(b, '0')
		b = append(b, ";t="...)
		return strconv.AppendInt(b, v.RetrySeconds(), 10)
	}
	b = strconv.AppendInt(b, v.Remaining, 10)
	b = append(b, ";t="...)
	t := int64(0)
	if v.Reset > 0 {
		t = Seconds(v.Reset)
	}
	return strconv.AppendInt(b, t, 10)
}

// AppendPolicy appends the RateLimit-Policy field value of v's rule.
func (v *Verdict) AppendPolicy(b []byte) []byte { return append(b, v.policy...) }

// AppendPolicy appends `"<name>";q=<requests>;w=<period seconds>`, the
// RateLimit-Policy of a limit; name must already be safe (PolicyName).
func AppendPolicy(b []byte, name string, l counting.Limit) []byte {
	b = append(b, '"')
	b = append(b, name...)
	b = append(b, `";q=`...)
	b = strconv.AppendFloat(b, l.Requests, 'f', -1, 64)
	b = append(b, ";w="...)
	return strconv.AppendInt(b, Seconds(l.Period), 10)
}

// PolicyName keeps a rule name within a structured-field string: printable
// ASCII without '"' and '\'.
func PolicyName(rule string) string {
	if rule == "" {
		return "guardd"
	}
	b := []byte(rule)
	for i, c := range b {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			b[i] = '_'
		}
	}
	return string(b)
}

type metrics struct {
	vec   *prometheus.CounterVec
	mu    sync.Mutex
	rules map[string]*ruleMetrics
}

type ruleMetrics struct {
	allowed, refused, shadowRefused prometheus.Counter
	lastLog                         atomic.Int64
}

func newMetrics(reg prometheus.Registerer, l *Limiter) (*metrics, error) {
	m := &metrics{rules: map[string]*ruleMetrics{},
		vec: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "guardd_throttle_requests_total",
			Help: "Requests counted by a throttle rule, by rule and outcome (allowed, refused, shadow_refused: a shadow rule would have refused)."},
			[]string{"rule", "outcome"})}
	if reg == nil {
		return m, nil
	}
	cs := []prometheus.Collector{m.vec,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "guardd_throttle_in_flight_requests", Help: "Requests counted by a concurrency rule whose log line has not come yet."},
			func() float64 { return float64(l.inflight.stats().total) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "guardd_throttle_in_flight_timeouts_total", Help: "Requests in flight released by the timeout, their log line never matched."},
			func() float64 { return float64(l.inflight.stats().timeouts) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "guardd_throttle_shed_in_flight_limit", Help: "The shedder's in-flight threshold (learned by AIMD with shedding.adaptive)."},
			func() float64 {
				if l.shed == nil {
					return 0
				}
				if v := l.shed.limit.Load(); v > 0 {
					return float64(v)
				}
				return float64(l.shed.cfg.InFlight)
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "guardd_throttle_shed_level", Help: "How many of the least important traffic classes are being shed."},
			func() float64 {
				if l.shed == nil {
					return 0
				}
				return float64(l.shed.level.Load())
			}),
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("throttle: register metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) rule(name string) *ruleMetrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rm, ok := m.rules[name]; ok {
		return rm
	}
	rm := &ruleMetrics{allowed: m.vec.WithLabelValues(name, "allowed"), refused: m.vec.WithLabelValues(name, "refused"),
		shadowRefused: m.vec.WithLabelValues(name, "shadow_refused")}
	m.rules[name] = rm
	return rm
}

package rules

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/guardd/guardd/characteristics"
)

// ruleEval is how one rule is evaluated: native predicates where they
// compiled, prepared OPA queries otherwise.
type ruleEval struct {
	rule               *Rule
	count, mitigate    *predicate              // nil: evaluate through OPA
	countQ, mitigateQ  *rego.PreparedEvalQuery // only where the predicate is nil
	timeout            time.Duration           // deadline of one OPA evaluation
	fallbacks          prometheus.Counter
	timeouts, failures prometheus.Counter
}

// Set is an immutable set of loaded rules. Its methods are safe for
// concurrent use.
type Set struct {
	rules   []*Rule
	evals   []*ruleEval
	plan    *plan // the native predicates of every rule, as bits
	log     *slog.Logger
	timeout time.Duration
	metrics *metrics
	lastLog atomic.Int64 // unix nanoseconds of the last evaluation error logged
	now     func() time.Time
}

type metrics struct {
	fallbacks *prometheus.CounterVec
	errors    *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "guardd_rules_fallback_evaluations_total",
			Help: "Evaluations of a rule expression by OPA because it did not compile to a native predicate.",
		}, []string{"rule"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "guardd_rules_evaluation_errors_total",
			Help: "OPA evaluations of a rule that failed (reason error) or ran out of time (reason timeout); each counted as false.",
		}, []string{"rule", "reason"}),
	}
	if reg != nil {
		m.fallbacks = register(reg, m.fallbacks)
		m.errors = register(reg, m.errors)
	}
	return m
}

// register registers c, or returns the collector already registered under
// its name, so that reloading rules keeps one series per rule.
func register(reg prometheus.Registerer, c *prometheus.CounterVec) *prometheus.CounterVec {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if prev, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				return prev
			}
		}
	}
	return c
}

func newSet(c *ast.Compiler, evals []*ruleEval, opts Options) (*Set, error) {
	s := &Set{
		log:     opts.Logger,
		timeout: opts.EvalTimeout,
		metrics: newMetrics(opts.Registerer),
		now:     time.Now,
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.timeout <= 0 {
		s.timeout = defaultEvalTimeout
	}
	for _, re := range evals {
		re.timeout = s.timeout
		s.add(re)
	}
	s.plan = newPlan(s.evals)
	return s, nil
}

func (s *Set) add(re *ruleEval) {
	n := re.rule.Name
	re.fallbacks = s.metrics.fallbacks.WithLabelValues(n)
	re.timeouts = s.metrics.errors.WithLabelValues(n, "timeout")
	re.failures = s.metrics.errors.WithLabelValues(n, "error")
	s.rules = append(s.rules, re.rule)
	s.evals = append(s.evals, re)
}

// Rules returns the rules of s in evaluation order; index i of the slice is
// the i of Matches.Count and Matches.Mitigate. The caller must not modify them.
func (s *Set) Rules() []*Rule { return s.rules }

// Merge returns a set holding the rules of all sets, in order. Two rules with
// the same name are an error. The merged set logs and counts through the
// options of the first set; each rule keeps its own fallback deadline.
// Operand values cached per event are keyed by operand across all sets, so
// rules from different sets share them.
func Merge(sets ...*Set) (*Set, error) {
	var out *Set
	seen := map[string]*Rule{}
	for _, s := range sets {
		if s == nil {
			continue
		}
		if out == nil {
			out = &Set{log: s.log, timeout: s.timeout, metrics: s.metrics, now: s.now}
		}
		for _, re := range s.evals {
			if prev, dup := seen[re.rule.Name]; dup {
				return nil, fmt.Errorf("rules: merge: rule %s at %s:%d is also defined at %s:%d",
					re.rule.Name, re.rule.File, re.rule.Line, prev.File, prev.Line)
			}
			seen[re.rule.Name] = re.rule
			cp := *re
			out.add(&cp)
		}
	}
	if out == nil {
		return newSet(nil, nil, Options{})
	}
	out.plan = newPlan(out.evals)
	return out, nil
}

// Select returns a set of the rules of s for which keep holds, in order,
// logging and counting through s's options: the decision API evaluates only
// its throttle rules on every request.
func (s *Set) Select(keep func(*Rule) bool) *Set {
	out := &Set{log: s.log, timeout: s.timeout, metrics: s.metrics, now: s.now}
	for _, re := range s.evals {
		if keep(re.rule) {
			cp := *re
			out.add(&cp)
		}
	}
	out.plan = newPlan(out.evals)
	return out
}

// Matches holds the results of Set.Eval: one bit per rule for the counting
// expression and one for the mitigation expression. A Matches is reused
// across events by one goroutine at a time; its zero value is ready.
type Matches struct {
	count, mitigate []uint64
	st              state
	input           ast.Value // input document for fallback evaluations, built once per event
}

// Count reports whether rule i's counting expression held for the event.
func (m *Matches) Count(i int) bool { return bit(m.count, i) }

// Mitigate reports whether rule i's mitigation expression held for the event.
func (m *Matches) Mitigate(i int) bool { return bit(m.mitigate, i) }

// Words returns word w of the results as bits, for a caller that walks
// the rules that matched rather than asking rule by rule: bit j of count is
// Count(64*w+j), and of mitigate Mitigate(64*w+j). Bits and words beyond
// the rules are 0.
func (m *Matches) Words(w int) (count, mitigate uint64) {
	if w < 0 || w >= len(m.count) {
		return 0, 0
	}
	return m.count[w], m.mitigate[w]
}

func bit(b []uint64, i int) bool {
	w := i >> 6
	return w < len(b) && b[w]&(1<<(uint(i)&63)) != 0
}

func (m *Matches) reset(n int) {
	w := (n + 63) >> 6
	if cap(m.count) < w {
		m.count = make([]uint64, w)
		m.mitigate = make([]uint64, w)
	}
	m.count = m.count[:w]
	m.mitigate = m.mitigate[:w]
	clear(m.count)
	clear(m.mitigate)
	m.input = nil
	m.st.next()
}

// Eval evaluates the counting and mitigation expressions of every rule of s
// on e and stores the results in m. It is safe for concurrent use with
// distinct Matches, and allocates nothing when every rule is native (once
// m's memo tables exist).
func (s *Set) Eval(e *characteristics.Event, m *Matches) {
	m.reset(len(s.evals))
	p := s.plan
	b := &m.st.bits
	p.begin(e, b)
	p.run(e, &m.st)
	p.results(b, m.count, m.mitigate)
	for _, i := range p.opa {
		re, rp := s.evals[i], p.rules[i]
		var c, mit bool
		if rp.count == predOPA {
			c = s.fallback(re, re.countQ, e, m)
		} else {
			c = b.holds(rp.count)
		}
		switch rp.mitigate {
		case predNone:
			mit = c
		case predOPA:
			mit = s.fallback(re, re.mitigateQ, e, m)
		default:
			mit = b.holds(rp.mitigate)
		}
		w, bit := i>>6, uint64(1)<<(uint(i)&63)
		m.count[w] &^= bit
		m.mitigate[w] &^= bit
		if c {
			m.count[w] |= bit
		}
		if mit {
			m.mitigate[w] |= bit
		}
	}
	p.end(b)
}

// fallback evaluates a prepared query with a deadline. An error or a timeout
// counts as false, is counted and logged at most once a second.
func (s *Set) fallback(re *ruleEval, q *rego.PreparedEvalQuery, e *characteristics.Event, m *Matches) bool {
	re.fallbacks.Inc()
	if m.input == nil {
		v, err := ast.InterfaceToValue(e.Input())
		if err != nil {
			re.failures.Inc()
			s.logError(re, err)
			return false
		}
		m.input = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), re.timeout)
	defer cancel()
	rs, err := q.Eval(ctx, rego.EvalParsedInput(m.input))
	if err != nil {
		if ctx.Err() != nil {
			re.timeouts.Inc()
		} else {
			re.failures.Inc()
		}
		s.logError(re, err)
		return false
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return false
	}
	b, ok := rs[0].Expressions[0].Value.(bool)
	return ok && b
}

func (s *Set) logError(re *ruleEval, err error) {
	now := s.now().UnixNano()
	last := s.lastLog.Load()
	if now-last < int64(time.Second) || !s.lastLog.CompareAndSwap(last, now) {
		return
	}
	s.log.Warn("rules: evaluation failed; counted as false", "rule", re.rule.Name, "file", re.rule.File, "err", err)
}

// prepare prepares query for full evaluation.
func prepare(ctx context.Context, c *ast.Compiler, query string) (*rego.PreparedEvalQuery, error) {
	pq, err := rego.New(rego.Compiler(c), rego.Query(query)).PrepareForEval(ctx)
	if err != nil {
		return nil, err
	}
	return &pq, nil
}

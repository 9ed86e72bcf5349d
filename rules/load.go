package rules

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/types"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/guardd/guardd/action"
	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/counting"
	"github.com/guardd/guardd/rules/builtin"
)

// Actions and algorithms a rule may name, in the order error messages list
// them: the actions are mitigation's one list.
var (
	Actions    = action.Names()
	Algorithms = []string{"sliding_window", "fixed_window", "sliding_log", "token_bucket", "gcra"}
	// OnStoreErrors are the values of on_store_error (docs/fleet.md).
	OnStoreErrors = counting.StoreErrorPolicies()
)

// Defaults for optional metadata keys.
const (
	DefaultAlgorithm         = "sliding_window"
	DefaultMitigationTimeout = 10 * time.Minute
	defaultEvalTimeout       = 10 * time.Millisecond
	// partialEvalTimeout bounds the partial evaluation of one expression at
	// load; a rule that takes longer (say, a huge constant range) falls back.
	partialEvalTimeout = 5 * time.Second
)

// metadata keys, in the order error messages list them.
var metadataKeys = []string{"characteristics", "period", "requests_per_period", "action", "mitigation_timeout", "algorithm", "score", "distinct", "regularity", "windows", "burst", "shadow", "retry_jitter", "concurrency", "on_store_error", "challenge_fallback", "challenge_tier", "challenge_difficulty", "anomaly_score"}

// Rule is one loaded rule.
type Rule struct {
	Name, Title, File string // Name is the last segment of the package path
	Line              int    // line of the package clause in File

	Characteristics   []characteristics.Characteristic
	Period            time.Duration
	MitigationTimeout time.Duration
	Requests          float64                         // requests_per_period
	Action            action.Action                   // one of Actions
	Algorithm         counting.Algorithm              // parsed once, at load
	Score             *characteristics.Characteristic // nil = count 1 per request
	// Distinct, when set, makes the rule count the distinct values of this
	// characteristic per key (distinct paths per address) rather than
	// requests; requests_per_period is then a number of distinct values.
	Distinct *characteristics.Characteristic
	// Regularity, when set, lets the rule trip only on a key whose counted
	// events arrive at machine-regular intervals (regularity.go).
	Regularity *Regularity
	// Windows are the rule's limits: Period and Requests first, then those
	// of the windows: key. The rule trips when a key goes over any of them.
	Windows []Window

	// Burst is how many requests may arrive at once under token_bucket and
	// gcra; 0 means Requests.
	Burst float64
	// Shadow (action throttle): count and decide, never refuse; what would
	// have been refused is counted and logged.
	Shadow bool
	// Concurrency (action throttle) limits the key's requests in flight
	// (asked about and not yet logged) instead of its rate; 0: a rate limit.
	Concurrency int
	// RetryJitter (action throttle): a refused request's Retry-After gets a
	// random extra in [0, RetryJitter], to spread the retries.
	RetryJitter time.Duration
	// OnStoreError (fleet mode) is what a request the rule counts gets while
	// Redis is unreachable or slower than its deadline: open, closed or
	// local (the default; DESIGN.md "Fleet mode").
	OnStoreError counting.StoreErrorPolicy

	// Challenge holds what action challenge says; zero for other actions.
	Challenge Challenge
	// AnomalyScore, when > 0, is what each trip of the rule adds to the
	// client's anomaly score (package scoring): weak signals add up before
	// anything is refused. The rule's own action still applies (usually
	// log: a weak signal does not act alone).
	AnomalyScore float64

	// Native reports that both expressions compiled to native predicates;
	// otherwise the rule is evaluated by OPA on every event.
	Native bool
	// Fallback names the expressions that kept the rule from being native.
	Fallback []string
	// RequestTime reports that the rule reads only what is known when a
	// request arrives (no status, bytes, timing, log variables, fingerprints
	// or source), so the decision API can count it before the request is
	// served, and its own request can already be mitigated.
	RequestTime bool
	// Session reports that the rule may read session.* (input.session): the
	// pipeline keeps sessions only for a rule set with such a rule.
	Session bool

	hasMitigate bool
}

// Window is one limit of a rule: Requests per Period.
type Window struct {
	Period   time.Duration
	Requests float64
}

// Options configures Load. The zero value is usable.
type Options struct {
	Logger     *slog.Logger          // nil: slog.Default()
	Registerer prometheus.Registerer // nil: metrics are kept but not exported
	// EvalTimeout bounds each fallback (OPA) evaluation; 0 means 10ms.
	EvalTimeout time.Duration
	// DisableNative evaluates every rule through OPA, as the peer of the
	// native predicates in differential tests and benchmarks.
	DisableNative bool
	// LoginPaths are given to rules as data.guardd.config.login_* (see
	// dataModule); nil means DefaultLoginPaths.
	LoginPaths []string
	// Paranoia is given to rules as data.guardd.config.paranoia: 1 to 4, as
	// the OWASP CRS's paranoia levels, each turning on more signature
	// classes (and more false positives); 0 means 1.
	Paranoia int
}

// Error is one problem found at load, located in a rule file.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// errorList gathers load errors in file and line order.
type errorList []*Error

func (l *errorList) add(file string, line int, format string, args ...any) {
	*l = append(*l, &Error{File: file, Line: line, Msg: fmt.Sprintf(format, args...)})
}

func (l errorList) err() error {
	if len(l) == 0 {
		return nil
	}
	slices.SortStableFunc(l, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errors.Join(errs...)
}

// forbidden lists built-ins that are not marked nondeterministic by OPA but
// still reach outside the event: the runtime environment.
var forbidden = map[string]string{
	"opa.runtime": "reads the environment",
	"trace":       "writes to the evaluation trace",
}

// capabilities returns OPA's capabilities minus every built-in that reaches
// the network, the file system, the wall clock or randomness, and the reason
// each was removed.
func capabilities() (*ast.Capabilities, map[string]string) {
	caps := ast.CapabilitiesForThisVersion()
	removed := map[string]string{}
	kept := caps.Builtins[:0]
	for _, b := range caps.Builtins {
		if why, ok := forbidden[b.Name]; ok {
			removed[b.Name] = why
			continue
		}
		if b.Nondeterministic {
			removed[b.Name] = "is nondeterministic (network, wall clock or randomness); event time is input.time"
			continue
		}
		kept = append(kept, b)
	}
	caps.Builtins = kept
	caps.AllowNet = []string{} // no remote schemas either
	return caps, removed
}

// source is one parsed rule or test file.
type source struct {
	file   string
	text   string
	module *ast.Module
}

// readFS parses the *.rego files under fsys, tests included when tests is set.
// Files are parsed in parallel: parsing is most of loading a rule library,
// and guardd replay waits for it before reading its first line.
func readFS(fsys fs.FS, tests bool, errs *errorList) ([]*source, error) {
	var out []*source
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(p, ".rego") {
			return nil
		}
		if strings.HasSuffix(p, "_test.rego") && !tests {
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		out = append(out, &source{file: p, text: string(b)})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("rules: read: %w", err)
	}
	perr := make([]error, len(out))
	parallel(len(out), func(i int) {
		src := out[i]
		src.module, perr[i] = ast.ParseModuleWithOpts(src.file, src.text, ast.ParserOptions{ProcessAnnotation: true, RegoVersion: ast.RegoV1})
	})
	parsed := out[:0]
	for i, src := range out {
		if perr[i] != nil {
			addASTErrors(errs, src.file, perr[i])
			continue
		}
		parsed = append(parsed, src)
	}
	out = parsed
	sort.Slice(out, func(i, j int) bool { return out[i].file < out[j].file })
	return out, nil
}

// addASTErrors turns OPA parse and compile errors into located errors.
func addASTErrors(errs *errorList, file string, err error) {
	var aerrs ast.Errors
	if !errors.As(err, &aerrs) {
		errs.add(file, 0, "%v", err)
		return
	}
	for _, e := range aerrs {
		f, line := file, 0
		if e.Location != nil {
			if e.Location.File != "" {
				f = e.Location.File
			}
			line = e.Location.Row
		}
		errs.add(f, line, "%s", e.Message)
	}
}

// Load reads every *.rego file under fsys (not *_test.rego), validates and
// compiles the rules, and returns them as a Set. It is all-or-nothing: any
// error rejects the whole set, and the joined error lists every problem found.
func Load(fsys fs.FS, opts Options) (*Set, error) {
	var errs errorList
	srcs, err := readFS(fsys, false, &errs)
	if err != nil {
		return nil, err
	}
	caps, removed := capabilities()
	var rules []*Rule
	modules := map[string]*ast.Module{}
	seen := map[string]*Rule{}
	for _, src := range srcs {
		if src.module == nil {
			continue
		}
		n := len(errs)
		checkBuiltins(&errs, src, removed)
		clean := len(errs) == n // compiling a forbidden call would only repeat the error
		r := parseRule(&errs, src)
		if r == nil {
			if clean {
				modules[src.file] = src.module
			}
			continue
		}
		if prev, dup := seen[r.Name]; dup {
			errs.add(src.file, r.Line, "package guardd.rules.%s is already declared at %s:%d; one rule per package", r.Name, prev.File, prev.Line)
			continue
		}
		seen[r.Name] = r
		var line int
		var why string
		r.RequestTime, line, why = requestTimeWhy(src.module, r)
		r.Session = readsSession(src.module, r)
		if r.Action == action.Throttle && !r.RequestTime {
			if line == 0 {
				line = metaLine(src, strings.Fields(why)[0])
			}
			errs.add(src.file, cmp.Or(line, r.Line), "action throttle decides when a request arrives, but %s; a throttle rule may read only ip.*, http.host, method, path, query, user_agent, referer, headers, cookies and time", why)
			continue
		}
		if clean {
			rules = append(rules, r)
			modules[src.file] = src.module
		}
	}
	data, err := dataModule(opts.LoginPaths, opts.Paranoia)
	if err != nil {
		return nil, err
	}
	modules[data.Package.Location.File] = data
	// Compile what parsed even when other files failed, so that one run
	// reports the errors of every file.
	c := ast.NewCompiler().WithCapabilities(caps).WithDefaultRegoVersion(ast.RegoV1)
	if len(modules) > 0 {
		c.Compile(modules)
		if c.Failed() {
			addASTErrors(&errs, "", c.Errors)
			return nil, errs.err()
		}
	}
	for _, r := range rules {
		checkTypes(&errs, c, r)
	}
	if len(errs) > 0 {
		return nil, errs.err()
	}
	if len(rules) == 0 {
		return newSet(nil, nil, opts)
	}
	return compileSet(c, rules, opts)
}

// LoadDir is Load over the directory dir.
func LoadDir(dir string, opts Options) (*Set, error) {
	if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("rules: %s is not a directory", dir)
	}
	return Load(os.DirFS(dir), opts)
}

// Builtin loads the rule library embedded in the binary.
func Builtin(opts Options) (*Set, error) {
	return Load(builtin.FS, opts)
}

// checkBuiltins rejects calls to removed built-ins, naming each.
func checkBuiltins(errs *errorList, src *source, removed map[string]string) {
	ast.WalkExprs(src.module, func(e *ast.Expr) bool {
		if !e.IsCall() {
			return false
		}
		name := e.Operator().String()
		if why, ok := removed[name]; ok {
			errs.add(src.file, e.Location.Row, "built-in %s is not allowed in rules: it %s", name, why)
		}
		return false
	})
	ast.WalkTerms(src.module, func(t *ast.Term) bool {
		call, ok := t.Value.(ast.Call)
		if !ok || len(call) == 0 {
			return false
		}
		name := call[0].String()
		if why, ok := removed[name]; ok {
			line := 0
			if t.Location != nil {
				line = t.Location.Row
			}
			errs.add(src.file, line, "built-in %s is not allowed in rules: it %s", name, why)
		}
		return false
	})
}

// parseRule reads the package and metadata of a rule module.
func parseRule(errs *errorList, src *source) *Rule {
	m := src.module
	r := &Rule{File: src.file, Line: m.Package.Location.Row}
	p := m.Package.Path
	if len(p) != 4 || !p[1].Equal(ast.StringTerm("guardd")) || !p[2].Equal(ast.StringTerm("rules")) {
		errs.add(src.file, r.Line, "package %s: want guardd.rules.<name>", strings.TrimPrefix(p.String(), "data."))
		return nil
	}
	name, ok := p[3].Value.(ast.String)
	if !ok || name == "" {
		errs.add(src.file, r.Line, "package %s: want guardd.rules.<name>", p)
		return nil
	}
	r.Name = string(name)
	var ann *ast.Annotations
	for _, a := range m.Annotations {
		if a.Scope == "package" {
			ann = a
			break
		}
	}
	if ann == nil {
		errs.add(src.file, r.Line, "rule %s has no METADATA annotation before its package clause; it needs custom: with %s", r.Name, strings.Join(metadataKeys[:4], ", "))
		return nil
	}
	r.Title = cmp.Or(ann.Title, r.Name)
	n := len(*errs)
	meta := metaReader{errs: errs, src: src, row: ann.Location.Row}
	custom := ann.Custom
	for _, k := range slices.Sorted(maps.Keys(custom)) {
		if !slices.Contains(metadataKeys, k) {
			errs.add(src.file, meta.line(k), "unknown metadata key %q; accepted: %s", k, strings.Join(metadataKeys, ", "))
		}
	}
	r.Characteristics = meta.characteristics(custom)
	extra, hasWindows := meta.windows(custom)
	_, hasPeriod := custom["period"]
	_, hasRequests := custom["requests_per_period"]
	_, hasConcurrency := custom["concurrency"]
	if (!hasWindows && !hasConcurrency) || hasPeriod || hasRequests {
		r.Period = meta.duration(custom, "period", 0)
		r.Requests = meta.number(custom, "requests_per_period")
		r.Windows = append(r.Windows, Window{Period: r.Period, Requests: r.Requests})
	}
	r.Windows = append(r.Windows, extra...)
	if len(r.Windows) > 0 {
		r.Period, r.Requests = r.Windows[0].Period, r.Windows[0].Requests
	}
	r.MitigationTimeout = meta.duration(custom, "mitigation_timeout", DefaultMitigationTimeout)
	if a := meta.choice(custom, "action", "", Actions); a != "" {
		r.Action, _ = action.Parse(a)
	}
	// choice has checked the name: Algorithms are counting's names.
	r.Algorithm, _ = counting.ParseAlgorithm(meta.choice(custom, "algorithm", DefaultAlgorithm, Algorithms))
	// choice has checked the name, as for the algorithm.
	r.OnStoreError, _ = counting.ParseStoreErrorPolicy(meta.choice(custom, "on_store_error", "local", OnStoreErrors))
	r.Score = meta.score(custom)
	r.Distinct = meta.distinct(custom, r)
	r.Regularity = meta.regularity(custom, r)
	mitigateLine := 0
	for _, rule := range m.Rules {
		switch rule.Head.Name.String() {
		case "mitigate":
			r.hasMitigate = true
			mitigateLine = rule.Location.Row
		}
	}
	meta.throttle(custom, r, mitigateLine)
	meta.challenge(custom, r)
	meta.anomalyScore(custom, r)
	if len(*errs) > n {
		return nil
	}
	return r
}

// metaLine finds the line of a metadata key in src's package annotation,
// or 0.
func metaLine(src *source, key string) int {
	if key == "characteristic" {
		key = "characteristics"
	}
	for _, a := range src.module.Annotations {
		if a.Scope == "package" && a.Location != nil {
			return metaReader{src: src, row: a.Location.Row}.line(key)
		}
	}
	return 0
}

// metaReader validates the custom: keys of one annotation.
type metaReader struct {
	errs *errorList
	src  *source
	row  int // the METADATA line
}

// line finds the comment line of key in the annotation, or the METADATA line.
func (mr metaReader) line(key string) int {
	for _, c := range mr.src.module.Comments {
		if c.Location == nil || c.Location.Row <= mr.row {
			continue
		}
		t := strings.TrimSpace(string(c.Text))
		if rest, ok := strings.CutPrefix(t, key); ok && strings.HasPrefix(strings.TrimSpace(rest), ":") {
			return c.Location.Row
		}
	}
	return mr.row
}

func (mr metaReader) fail(key, format string, args ...any) {
	mr.errs.add(mr.src.file, mr.line(key), "metadata %s: "+format, append([]any{key}, args...)...)
}

func (mr metaReader) characteristics(custom map[string]any) []characteristics.Characteristic {
	v, ok := custom["characteristics"]
	if !ok {
		mr.fail("characteristics", "missing; want a non-empty list such as [ip.src] (accepted: %s)", strings.Join(characteristics.Names(), ", "))
		return nil
	}
	var names []string
	switch v := v.(type) {
	case string:
		names = []string{v}
	case []any:
		for _, x := range v {
			s, ok := x.(string)
			if !ok {
				mr.fail("characteristics", "element %v is not a string", x)
				return nil
			}
			names = append(names, s)
		}
	default:
		mr.fail("characteristics", "got %v; want a list such as [ip.src]", v)
		return nil
	}
	if len(names) == 0 {
		mr.fail("characteristics", "empty; want at least one, such as [ip.src]")
		return nil
	}
	var out []characteristics.Characteristic
	for _, n := range names {
		c, err := characteristics.Parse(strings.TrimSpace(n))
		if err != nil {
			mr.fail("characteristics", "%v", err)
			continue
		}
		out = append(out, c)
	}
	return out
}

func (mr metaReader) duration(custom map[string]any, key string, def time.Duration) time.Duration {
	v, ok := custom[key]
	if !ok {
		if def == 0 {
			mr.fail(key, "missing; want a Go duration such as 1m or 30s")
		}
		return def
	}
	s, ok := v.(string)
	if !ok {
		mr.fail(key, "got %v; want a Go duration with a unit, such as 1m or 30s", v)
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		mr.fail(key, "%q is not a positive Go duration; want e.g. 1m, 30s, 1h30m", s)
		return 0
	}
	return d
}

func (mr metaReader) number(custom map[string]any, key string) float64 {
	v, ok := custom[key]
	if !ok {
		mr.fail(key, "missing; want a number > 0")
		return 0
	}
	var f float64
	switch v := v.(type) {
	case int:
		f = float64(v)
	case int64:
		f = float64(v)
	case uint64:
		f = float64(v)
	case float64:
		f = v
	case json.Number:
		var err error
		if f, err = v.Float64(); err != nil {
			f = math.NaN()
		}
	case string:
		var err error
		if f, err = strconv.ParseFloat(v, 64); err != nil {
			f = math.NaN()
		}
	default:
		f = math.NaN()
	}
	if !(f > 0) || math.IsInf(f, 0) {
		mr.fail(key, "got %v; want a number > 0", v)
		return 0
	}
	return f
}

// throttle reads burst, shadow and retry_jitter, and checks what a throttle
// rule may not say.
func (mr metaReader) throttle(custom map[string]any, r *Rule, mitigateLine int) {
	if _, ok := custom["burst"]; ok {
		r.Burst = mr.number(custom, "burst")
		if r.Algorithm != counting.TokenBucket && r.Algorithm != counting.GCRA {
			mr.fail("burst", "applies to algorithm token_bucket or gcra, not %s", r.Algorithm)
		}
	}
	if v, ok := custom["shadow"]; ok {
		b, isBool := v.(bool)
		switch {
		case !isBool:
			mr.fail("shadow", "got %v; want true or false", v)
		case r.Action != action.Throttle:
			mr.fail("shadow", "applies to action throttle; to watch a detection rule without enforcing it, use action: log")
		}
		r.Shadow = b
	}
	if _, ok := custom["retry_jitter"]; ok {
		r.RetryJitter = mr.duration(custom, "retry_jitter", 0)
		if r.Action != action.Throttle {
			mr.fail("retry_jitter", "applies to action throttle")
		}
	}
	if _, ok := custom["concurrency"]; ok {
		n := mr.number(custom, "concurrency")
		switch {
		case r.Action != action.Throttle:
			mr.fail("concurrency", "applies to action throttle")
		case n != math.Trunc(n) || n > 1<<20:
			mr.fail("concurrency", "%v: want a whole number of requests in flight, at most %d", n, 1<<20)
		case r.Period != 0 || r.Requests != 0:
			mr.fail("concurrency", "a concurrency limit takes no period or requests_per_period; write a second throttle rule for a rate")
		default:
			r.Concurrency = int(n)
		}
	}
	if r.Action != action.Throttle {
		return
	}
	if _, ok := custom["windows"]; ok {
		mr.fail("windows", "not for action throttle: write one throttle rule per limit; all are counted and the most restrictive decides")
	}
	if _, ok := custom["distinct"]; ok {
		mr.fail("distinct", "not for action throttle: a throttle rule counts requests")
	}
	r.MitigationTimeout = 0 // no mitigation is ever made
	if _, ok := custom["mitigation_timeout"]; ok {
		mr.fail("mitigation_timeout", "has no meaning for action throttle: a throttle rule refuses requests one by one and makes no mitigation")
	}
	if mitigateLine > 0 {
		mr.errs.add(mr.src.file, mitigateLine, "a throttle rule refuses the requests its count expression counts; mitigate has no meaning for it")
	}
	if r.Algorithm == counting.SlidingLog && r.Requests > counting.MaxLogRequests {
		mr.fail("requests_per_period", "%v: sliding_log keeps every event time and accepts at most %d; use sliding_window, token_bucket or gcra", r.Requests, counting.MaxLogRequests)
	}
}

func (mr metaReader) choice(custom map[string]any, key, def string, accepted []string) string {
	v, ok := custom[key]
	if !ok {
		if def == "" {
			mr.fail(key, "missing; accepted: %s", strings.Join(accepted, ", "))
		}
		return def
	}
	s, _ := v.(string)
	if !slices.Contains(accepted, s) {
		mr.fail(key, "unexpected value %v; accepted: %s", v, strings.Join(accepted, ", "))
		return ""
	}
	return s
}

func (mr metaReader) score(custom map[string]any) *characteristics.Characteristic {
	v, ok := custom["score"]
	if !ok {
		return nil
	}
	s, ok := v.(string)
	if !ok {
		mr.fail("score", "got %v; want a numeric characteristic such as http.request_time", v)
		return nil
	}
	c, err := characteristics.Parse(strings.TrimSpace(s))
	if err != nil {
		mr.fail("score", "%v", err)
		return nil
	}
	switch {
	case c.Kind() == characteristics.KindNumber:
	case strings.HasPrefix(c.String(), "log.") || strings.HasPrefix(c.String(), "http.headers[") || strings.HasPrefix(c.String(), "http.cookies["):
		// a source variable, header or cookie holding a number
	default:
		mr.fail("score", "%s is not numeric; want http.request_time, http.bytes_sent, http.status, a log.<variable> or a header holding a number", c)
		return nil
	}
	return &c
}

// maxWindows bounds the windows of one rule: each costs a table.
const maxWindows = 4

// windows reads windows: [{period: 5m, requests_per_period: 20}, ...].
func (mr metaReader) windows(custom map[string]any) ([]Window, bool) {
	v, ok := custom["windows"]
	if !ok {
		return nil, false
	}
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		mr.fail("windows", "got %v; want a non-empty list such as [{period: 1h, requests_per_period: 10}]", v)
		return nil, true
	}
	if len(list) > maxWindows {
		mr.fail("windows", "%d windows; at most %d (each keeps a table of counters)", len(list), maxWindows)
		return nil, true
	}
	var out []Window
	for i, x := range list {
		m, ok := x.(map[string]any)
		if !ok {
			mr.fail("windows", "element %d is %v; want {period: <duration>, requests_per_period: <number>}", i+1, x)
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if k != "period" && k != "requests_per_period" {
				mr.fail("windows", "element %d: unknown key %q; accepted: period, requests_per_period", i+1, k)
			}
		}
		sub := metaReader{errs: mr.errs, src: mr.src, row: mr.row}
		n := len(*mr.errs)
		w := Window{Period: sub.windowDuration(m, i), Requests: sub.windowNumber(m, i)}
		if len(*mr.errs) == n {
			out = append(out, w)
		}
	}
	return out, true
}

func (mr metaReader) windowDuration(m map[string]any, i int) time.Duration {
	s, ok := m["period"].(string)
	d, err := time.ParseDuration(s)
	if !ok || err != nil || d <= 0 {
		mr.fail("windows", "element %d: period %v is not a positive Go duration; want e.g. 5m, 1h", i+1, m["period"])
		return 0
	}
	return d
}

func (mr metaReader) windowNumber(m map[string]any, i int) float64 {
	var f float64
	switch v := m["requests_per_period"].(type) {
	case int:
		f = float64(v)
	case int64:
		f = float64(v)
	case uint64:
		f = float64(v)
	case float64:
		f = v
	case json.Number:
		f, _ = v.Float64()
	}
	if !(f > 0) || math.IsInf(f, 0) {
		mr.fail("windows", "element %d: requests_per_period %v; want a number > 0", i+1, m["requests_per_period"])
		return 0
	}
	return f
}

// distinct reads distinct: <characteristic>.
func (mr metaReader) distinct(custom map[string]any, r *Rule) *characteristics.Characteristic {
	v, ok := custom["distinct"]
	if !ok {
		return nil
	}
	s, ok := v.(string)
	if !ok {
		mr.fail("distinct", "got %v; want one characteristic such as http.path (accepted: %s)", v, strings.Join(characteristics.Names(), ", "))
		return nil
	}
	c, err := characteristics.Parse(strings.TrimSpace(s))
	if err != nil {
		mr.fail("distinct", "%v", err)
		return nil
	}
	for _, k := range r.Characteristics {
		if k == c {
			mr.fail("distinct", "%s is also in characteristics; a key has one value of it, so it would always count 1", c)
			return nil
		}
	}
	if r.Score != nil {
		mr.fail("distinct", "a rule counts distinct values or adds a score, not both; remove score or distinct")
		return nil
	}
	if a, ok := custom["algorithm"]; ok && a != DefaultAlgorithm {
		mr.fail("distinct", "distinct values are counted in a sliding window; algorithm %v does not apply (omit it or say %s)", a, DefaultAlgorithm)
		return nil
	}
	return &c
}

// checkTypes rejects a count or mitigate that is missing or not boolean.
func checkTypes(errs *errorList, c *ast.Compiler, r *Rule) {
	for _, name := range []string{"count", "mitigate"} {
		ref := ast.MustParseRef("data.guardd.rules." + r.Name + "." + name)
		rs := c.GetRulesExact(ref)
		if len(rs) == 0 {
			if name == "count" {
				errs.add(r.File, r.Line, "rule %s has no count rule; want e.g. `count if input.http.status == 404`", r.Name)
			}
			continue
		}
		line := rs[0].Location.Row
		for _, rr := range rs {
			if len(rr.Head.Args) > 0 {
				errs.add(r.File, rr.Location.Row, "%s is a function; want a boolean rule such as `%s if { ... }`", name, name)
				return
			}
		}
		t := c.TypeEnv.Get(ref)
		if t == nil || !isBoolean(t) {
			errs.add(r.File, line, "%s has type %v; want boolean (`%s if { ... }`)", name, t, name)
		}
	}
}

func isBoolean(t types.Type) bool { return types.Compare(t, types.B) == 0 }

// compileSet translates every rule and prepares the fallback queries.
func compileSet(c *ast.Compiler, rules []*Rule, opts Options) (*Set, error) {
	ctx := context.Background()
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	evals := make([]*ruleEval, len(rules))
	errs := make([]error, len(rules))
	// Rules compile independently against the compiled modules, which OPA
	// treats as read-only once compiled, so they are compiled in parallel.
	parallel(len(rules), func(i int) { evals[i], errs[i] = compileRule(ctx, c, rules[i], opts) })
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, re := range evals {
		r := re.rule
		if !r.Native && !opts.DisableNative {
			log.Warn("rules: rule falls back to full OPA evaluation on every event",
				"rule", r.Name, "file", r.File, "line", r.Line, "unsupported", strings.Join(r.Fallback, "; "))
		}
	}
	return newSet(c, evals, opts)
}

// compileRule compiles r's counting and mitigation expressions: natively
// where it can, and as prepared OPA queries where it cannot.
func compileRule(ctx context.Context, c *ast.Compiler, r *Rule, opts Options) (*ruleEval, error) {
	re := &ruleEval{rule: r}
	var why []string
	for _, name := range []string{"count", "mitigate"} {
		if name == "mitigate" && !r.hasMitigate {
			continue
		}
		q := "data.guardd.rules." + r.Name + "." + name
		var pred *predicate
		if !opts.DisableNative {
			var reason string
			pctx, cancel := context.WithTimeout(ctx, partialEvalTimeout)
			pred, reason = compileNative(pctx, c, q)
			cancel()
			if pred == nil {
				why = append(why, name+": "+reason)
			}
		} else {
			why = append(why, name+": native compilation disabled")
		}
		// OPA evaluates only what did not compile natively: a prepared
		// query is made for that alone (preparing every rule's was a
		// tenth of loading the library, paid again on every reload).
		var prepared *rego.PreparedEvalQuery
		if pred == nil {
			var err error
			if prepared, err = prepare(ctx, c, q); err != nil {
				return nil, fmt.Errorf("rules: %s:%d: prepare %s: %w", r.File, r.Line, name, err)
			}
		}
		if name == "count" {
			re.count, re.countQ = pred, prepared
		} else {
			re.mitigate, re.mitigateQ = pred, prepared
		}
	}
	r.Native = len(why) == 0
	r.Fallback = why
	return re, nil
}

// parallel calls f(0) … f(n-1) on up to GOMAXPROCS goroutines and returns
// when all have returned.
func parallel(n int, f func(i int)) {
	workers := min(n, runtime.GOMAXPROCS(0))
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}

package rules

import (
	"context"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/gobwas/glob"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/characteristics/signature"
)

// predicate is a compiled expression: an OR of ANDs of conditions. No
// alternatives means never true; an empty alternative means always true.
type predicate struct {
	alts [][]step
	text string // the residual, for messages
	// src and key, for a support rule: the one origin field every
	// condition of it is a pure function of (srcNone when there is none),
	// and its meaning, the names of its conditions, which names a
	// reference to it across rules ("" when it has none); supportOrigin.
	src origin
	key string
}

// step is one condition of a conjunction. slot names the condition across
// rules (the library repeats conditions: GET or HEAD, not a verified
// crawler, not an asset, the login paths, the protocol versions, the TLS
// client), or is -1, so that a Set computes each at most once per event (a
// bit of its plan, see eval.go). src is the one event field the condition
// is a function of, when its results are remembered across events.
type step struct {
	c     cond
	slot  int
	src   origin
	name  string     // the expression, for messages
	shape *shapeInfo // what the condition reads of a path's digits; nil: unknown
	cost  int        // translator.cost
	// needsJA4: the condition holds only on an event with a JA4 (it reads
	// tls.client, which is undefined without one, and is not negated).
	needsJA4 bool
}

// cond is one native condition. An undefined operand makes it false, as an
// undefined expression makes a Rego body fail; negation is applied on top.
type cond func(e *characteristics.Event, st *state) bool

// eval evaluates a support rule's predicate (for `not helper`). Its own
// conditions are not cached: the condition that calls it is, once per event.
func (p *predicate) eval(e *characteristics.Event, st *state) bool {
	for _, alt := range p.alts {
		ok := true
		for i := range alt {
			if !alt[i].c(e, st) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// state is per-goroutine scratch space: the values of formatted and
// case-folded operands, computed once per event and shared by every rule
// that reads them.
type state struct {
	gen  uint32   // current event; a slot is valid when gens[slot] == gen
	gens []uint32 // event of each slot's value
	vals []string
	oks  []bool
	bufs [][]byte

	// memo remembers multi-needle scans across events: a few user agents
	// make most of the traffic, and scanning one costs far more than
	// comparing it. Keys are copies, so they never alias an event's buffer.
	memo     [32]memoEntry
	memoNext int

	masks   []signature.Mask           // results of guardd built-ins per slot
	sigMemo *[sigMemoSize]sigMemoEntry // signature scans across events, by hash

	bits bitState // the results of a Set's conditions this event, and their memo
}

type memoEntry struct {
	m   *multiContains
	key []byte
	res bool
}

// memoMax is the longest value remembered; longer ones are scanned each time.
const memoMax = 512

func (st *state) memoGet(m *multiContains, v string) (res, ok bool) {
	for i := range st.memo {
		if e := &st.memo[i]; e.m == m && string(e.key) == v {
			return e.res, true
		}
	}
	return false, false
}

func (st *state) memoPut(m *multiContains, v string, res bool) {
	if len(v) > memoMax {
		return
	}
	e := &st.memo[st.memoNext]
	st.memoNext = (st.memoNext + 1) % len(st.memo)
	e.m, e.key, e.res = m, append(e.key[:0], v...), res
}

// next invalidates every cached value.
func (st *state) next() {
	st.gen++
	if st.gen == 0 {
		clear(st.gens)
		st.gen = 1
	}
}

func (st *state) grow(slot int) {
	n := max(slot+1, 2*len(st.gens))
	st.gens = append(st.gens, make([]uint32, n-len(st.gens))...)
	st.vals = append(st.vals, make([]string, n-len(st.vals))...)
	st.oks = append(st.oks, make([]bool, n-len(st.oks))...)
	st.bufs = append(st.bufs, make([][]byte, n-len(st.bufs))...)
	st.masks = append(st.masks, make([]signature.Mask, n-len(st.masks))...)
}

// slots numbers the cached operands and the conditions of every set, by
// canonical name, so that sets loaded apart (and merged) agree on them. It
// grows with the distinct operands of the rules ever loaded, which are
// configuration.
var slots = struct {
	sync.Mutex
	m map[string]int
}{m: map[string]int{}}

func slotFor(key string) int {
	slots.Lock()
	defer slots.Unlock()
	s, ok := slots.m[key]
	if !ok {
		s = len(slots.m)
		slots.m[key] = s
	}
	return s
}

type valType uint8

const (
	tString valType = iota
	tNumber
)

const (
	foldNone = iota
	foldLower
	foldUpper
)

// operand reads one input value of an event, possibly lower- or upper-cased.
type operand struct {
	c    characteristics.Characteristic
	typ  valType
	kind characteristics.Kind
	fold int
	base *operand // the operand that fold applies to
	slot int      // cache slot, -1 when the value is read directly
	ja4  bool     // tls.client: undefined without a JA4 (Event.TLSClient)
}

func (o *operand) str(e *characteristics.Event, st *state) (string, bool) {
	if o.ja4 && e.TLS.JA4 == "" {
		return "", false // most lines: no fingerprint joined
	}
	if o.slot < 0 {
		return o.c.Str(e)
	}
	if o.slot >= len(st.gens) {
		st.grow(o.slot)
	}
	if st.gens[o.slot] == st.gen {
		return st.vals[o.slot], st.oks[o.slot]
	}
	var s string
	var ok bool
	switch {
	case o.fold != foldNone:
		if s, ok = o.base.str(e, st); ok {
			b := foldInto(st.bufs[o.slot][:0], s, o.fold)
			st.bufs[o.slot] = b
			s = unsafe.String(unsafe.SliceData(b), len(b))
		}
	case o.kind == characteristics.KindAddr:
		if ok = e.IP.IsValid(); ok {
			b := e.IP.AppendTo(st.bufs[o.slot][:0])
			st.bufs[o.slot] = b
			s = unsafe.String(unsafe.SliceData(b), len(b))
		}
	case o.kind == characteristics.KindPrefix:
		if ok = e.Prefix.IsValid(); ok {
			b := e.Prefix.AppendTo(st.bufs[o.slot][:0])
			st.bufs[o.slot] = b
			s = unsafe.String(unsafe.SliceData(b), len(b))
		}
	default:
		s, ok = o.c.Str(e)
	}
	st.gens[o.slot], st.vals[o.slot], st.oks[o.slot] = st.gen, s, ok
	return s, ok
}

// foldInto appends strings.ToLower(s) (or ToUpper) to dst without allocating
// beyond dst's growth.
func foldInto(dst []byte, s string, fold int) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			for _, r := range s[i:] {
				if fold == foldLower {
					r = unicode.ToLower(r)
				} else {
					r = unicode.ToUpper(r)
				}
				dst = utf8.AppendRune(dst, r)
			}
			return dst
		}
		if fold == foldLower && 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		} else if fold == foldUpper && 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

func (o *operand) num(e *characteristics.Event) (float64, bool) { return o.c.Num(e) }

func (o *operand) present(e *characteristics.Event, st *state) bool {
	if o.typ == tNumber {
		_, ok := o.c.Num(e)
		return ok
	}
	_, ok := o.str(e, st)
	return ok
}

// unsupported is the reason an expression cannot be compiled natively.
type unsupported struct{ what string }

func (u unsupported) Error() string { return u.what }

func unsup(format string, args ...any) error { return unsupported{fmt.Sprintf(format, args...)} }

// compileNative partially evaluates query with input unknown and translates
// the residual into a predicate. On failure it returns nil and the reason.
func compileNative(ctx context.Context, c *ast.Compiler, query string) (*predicate, string) {
	pq, err := rego.New(
		rego.Compiler(c),
		rego.Query(query),
		rego.Unknowns([]string{"input"}),
	).Partial(ctx)
	if err != nil {
		return nil, "partial evaluation: " + err.Error()
	}
	ss := &supportSet{rules: map[string][]*ast.Rule{}, preds: map[string]*predicate{}, busy: map[string]bool{}}
	for _, m := range pq.Support {
		for _, r := range m.Rules {
			k := r.Path().String()
			ss.rules[k] = append(ss.rules[k], r)
		}
	}
	tr := &translator{support: ss}
	p := &predicate{}
	var texts []string
	var sigs [][]condSig
	for _, body := range pq.Queries {
		alt, sig, err := tr.body(body)
		if err != nil {
			return nil, err.Error()
		}
		p.alts = append(p.alts, alt)
		sigs = append(sigs, sig)
		texts = append(texts, body.String())
	}
	p.text = strings.Join(texts, " OR ")
	p.alts = mergeAlts(p.alts, sigs)
	return p, ""
}

// supportSet translates the support rules that partial evaluation keeps
// (for example for `not helper` when helper cannot be inlined), each into a
// predicate: true when one of its bodies holds.
type supportSet struct {
	rules map[string][]*ast.Rule
	preds map[string]*predicate
	busy  map[string]bool
}

func (ss *supportSet) pred(path string) (*predicate, error) {
	if p, ok := ss.preds[path]; ok {
		return p, nil
	}
	rules, ok := ss.rules[path]
	if !ok {
		return nil, unsup("reference %s", path)
	}
	if ss.busy[path] {
		return nil, unsup("recursive support rule %s", path)
	}
	ss.busy[path] = true
	p := &predicate{}
	var sigs [][]condSig
	for _, r := range rules {
		if r.Default && r.Head.Value != nil && r.Head.Value.Equal(ast.BooleanTerm(false)) {
			continue // `default x := false`: the same as undefined for a condition
		}
		if r.Default || r.Else != nil || len(r.Head.Args) > 0 || r.Head.Key != nil ||
			(r.Head.Value != nil && !r.Head.Value.Equal(ast.BooleanTerm(true))) {
			return nil, unsup("support rule %v", r.Head)
		}
		tr := &translator{support: ss}
		alt, sig, err := tr.body(r.Body)
		if err != nil {
			return nil, err
		}
		p.alts = append(p.alts, alt)
		sigs = append(sigs, sig)
	}
	p.alts = mergeAlts(p.alts, sigs)
	p.src, p.key = supportOrigin(p.alts)
	ss.preds[path] = p
	return p, nil
}

// supportOrigin returns the meaning of a support rule, the names of the
// conditions of its alternatives, when each of them is named by its meaning
// (a slot); else "". With a meaning, a reference to the rule (`not
// named_tool`) is named by it, so the references of several rules to
// helpers of the same body are one condition of a Set. It also returns the
// origin field that every one of those conditions is a pure function of,
// else srcNone: the reference is then a condition of that field's group of
// a plan, remembered per value across events as the conditions it is made
// of would be in a rule's own body, rather than computed on every event.
// The path is left out: its group's conditions must each say what they
// read of a path's digits (shape.go), which a reference does not.
func supportOrigin(alts [][]step) (origin, string) {
	src, one := srcNone, true
	names := make([]string, 0, len(alts))
	for _, alt := range alts {
		if len(alt) == 0 {
			return srcNone, "" // always true: nothing to remember
		}
		ns := make([]string, 0, len(alt))
		for _, st := range alt {
			if st.slot < 0 {
				return srcNone, ""
			}
			if st.src == srcNone || st.src == srcPath || src != srcNone && st.src != src {
				one = false
			}
			src = st.src
			ns = append(ns, st.name)
		}
		names = append(names, strings.Join(ns, " && "))
	}
	if !one {
		src = srcNone
	}
	return src, "support:" + strings.Join(names, " || ")
}

type translator struct {
	support *supportSet
	vars    map[ast.Var]*operand
	used    []usedOperand // operands read by the expression being translated
	shape   *shapeInfo    // of the expression being translated (see shape.go)
	// supported is the support rule the expression being translated
	// refers to, if it is a reference to one.
	supported *predicate
}

// condSig describes a condition for mergeAlts: op applied to the operand
// written key with the constant string s. An empty op is a condition that
// cannot be merged.
type usedOperand struct {
	o       *operand
	viaCall bool // read as the argument of a nested call
}

type condSig struct {
	op, key, s string
	negated    bool
	o          *operand
}

func (sig condSig) String() string {
	return fmt.Sprintf("%s(%s,%q,%v)", sig.op, sig.key, sig.s, sig.negated)
}

func (tr *translator) body(body ast.Body) ([]step, []condSig, error) {
	tr.vars = map[ast.Var]*operand{}
	type entry struct {
		c    step
		sig  condSig
		cost int
	}
	var es []entry
	for _, e := range body {
		c, sig, err := tr.expr(e)
		if err != nil {
			return nil, nil, err
		}
		if c != nil {
			slot := -1
			if memoizable(e) {
				slot = slotFor("cond:" + e.String())
			}
			src := tr.operandsOrigin()
			if sp := tr.supported; sp != nil && sp.key != "" {
				// Named by its meaning; perhaps a function of one
				// field's value.
				name := sp.key
				if e.Negated {
					name = "not " + name
				}
				slot, src = slotFor("cond:"+name), sp.src
			}
			cost := tr.cost(e)
			needsJA4 := false
			for _, u := range tr.used {
				needsJA4 = needsJA4 || u.o.ja4 && !e.Negated
			}
			es = append(es, entry{step{c, slot, src, e.String(), tr.shape, cost, needsJA4}, sig, cost})
		}
	}
	// Conditions are pure functions of the event, so their order does not
	// change the result: cheap ones go first, to fail fast.
	slices.SortStableFunc(es, func(a, b entry) int { return a.cost - b.cost })
	out := make([]step, len(es))
	sigs := make([]condSig, len(es))
	for i, e := range es {
		out[i], sigs[i] = e.c, e.sig
	}
	return out, sigs, nil
}

// source returns the one event field that every operand of the expression
// just translated derives from, or srcNone: its condition is then a pure
// function of that field's value.
func (tr *translator) operandsOrigin() origin {
	src := srcNone
	for i, u := range tr.used {
		s := sourceOf(u.o.c)
		if i == 0 {
			src = s
		} else if s != src {
			return srcNone
		}
	}
	return src
}

// cost estimates the work of a compiled expression, to order a conjunction.
func (tr *translator) cost(e *ast.Expr) int {
	c := 1
	if e.IsCall() {
		switch e.Operator().String() {
		case "internal.member_2", "startswith", "endswith":
			c = 2
		case "strings.any_prefix_match", "strings.any_suffix_match":
			c = 3
		case "contains":
			c = 6
		case "glob.match":
			c = 10
		case "regex.match":
			c = 20
		case "guardd.signature":
			c = 8
		case "guardd.query_signature", "guardd.text_signature":
			c = 12
		case "guardd.sqli", "guardd.xss", "guardd.query_sqli", "guardd.query_xss", "guardd.text_injection":
			c = 30
		}
	} else if t, ok := e.Terms.(*ast.Term); ok {
		if ref, ok := t.Value.(ast.Ref); ok && ref.HasPrefix(ast.DefaultRootRef) {
			c = 5 // a support rule
		} else if ok && usuallyPresent(ref) {
			// Cheap, but it holds (or, negated, fails) on almost every
			// event: a selective test of the same cost decides sooner.
			c = 4
		}
	}
	for _, u := range tr.used {
		if u.o.fold != foldNone {
			c += 2
		}
		if u.o.ja4 {
			c += 6 // tls.client looks the JA4 up in the enricher's table
		}
	}
	return c
}

// usuallyPresent reports whether ref is input.<field> for a field that
// almost every request has (the request line's parts, the user agent, the
// client's address and network) or almost never (a verified crawler).
func usuallyPresent(ref ast.Ref) bool {
	if !ref.HasPrefix(ast.InputRootRef) || len(ref) != 3 {
		return false
	}
	a, ok1 := ref[1].Value.(ast.String)
	b, ok2 := ref[2].Value.(ast.String)
	if !ok1 || !ok2 {
		return false
	}
	switch string(a) + "." + string(b) {
	case "http.method", "http.path", "http.protocol", "http.user_agent", "ip.src", "ip.prefix", "ip.asnum", "bot.verified":
		return true
	}
	return false
}

// memoizable reports whether e's compiled condition is a function of the
// event alone, so that its text names it across rules: no variable bound
// elsewhere in the body and no reference to a support rule.
func memoizable(e *ast.Expr) bool {
	if len(e.With) > 0 {
		return false
	}
	ok := true
	var walk func(t *ast.Term) bool
	walk = func(t *ast.Term) bool {
		switch v := t.Value.(type) {
		case ast.Var:
			ok = false
		case ast.Ref:
			if !v.HasPrefix(ast.InputRootRef) || !v.IsGround() {
				ok = false
			}
			return true
		case ast.Call:
			for _, a := range v[1:] {
				ast.WalkTerms(a, walk)
			}
			return true
		}
		return !ok
	}
	if e.IsCall() {
		for _, a := range e.Operands() {
			ast.WalkTerms(a, walk)
		}
	} else if t, isTerm := e.Terms.(*ast.Term); isTerm {
		ast.WalkTerms(t, walk)
	} else {
		return false
	}
	return ok
}

// expr compiles one residual expression. A nil cond with a nil error is an
// expression that is always true.
func (tr *translator) expr(e *ast.Expr) (cond, condSig, error) {
	if len(e.With) > 0 {
		return nil, condSig{}, unsup("%v: `with` is not compiled natively", e)
	}
	tr.used = tr.used[:0]
	tr.shape = nil
	tr.supported = nil
	c, sig, err := tr.positive(e)
	if err != nil {
		return nil, condSig{}, unsup("%v: %v", e, err)
	}
	if e.Negated {
		if c == nil {
			return func(*characteristics.Event, *state) bool { return false }, condSig{}, nil
		}
		inner := c
		// OPA hoists the references among a call's operands, and nested
		// calls, out of the negation (rewriteDynamics, rewriteExprTerms), so
		// `not f(input.x)` fails, rather than holds, when input.x is
		// undefined; `not input.x = "a"` holds.
		var used []*operand
		for _, u := range tr.used {
			if u.viaCall || !e.IsEquality() {
				used = append(used, u.o)
			}
		}
		if e.IsCall() && len(used) > 0 {
			c = func(ev *characteristics.Event, st *state) bool {
				for _, o := range used {
					if !o.present(ev, st) {
						return false
					}
				}
				return !inner(ev, st)
			}
		} else {
			c = func(ev *characteristics.Event, st *state) bool { return !inner(ev, st) }
		}
		sig.negated = true
	}
	if sig.op == "" {
		sig = condSig{op: "expr", key: e.String()}
	}
	return c, sig, nil
}

func (tr *translator) positive(e *ast.Expr) (cond, condSig, error) {
	if t, ok := e.Terms.(*ast.Term); ok {
		return tr.truthy(t)
	}
	if !e.IsCall() {
		return nil, condSig{}, unsup("unsupported expression form")
	}
	op := e.Operator().String()
	args := e.Operands()
	switch op {
	case "eq", "equal":
		if len(args) != 2 {
			break
		}
		if v, ok := args[0].Value.(ast.Var); ok && op == "eq" {
			if _, bound := tr.vars[v]; !bound && !ast.IsConstant(args[1].Value) {
				return tr.bind(v, args[1])
			}
		}
		if v, ok := args[1].Value.(ast.Var); ok && op == "eq" {
			if _, bound := tr.vars[v]; !bound && !ast.IsConstant(args[0].Value) {
				return tr.bind(v, args[0])
			}
		}
		return tr.compare("equal", args[0], args[1])
	case "neq", "lt", "lte", "gt", "gte":
		if len(args) == 2 {
			return tr.compare(op, args[0], args[1])
		}
	case "lower", "upper":
		if len(args) == 2 {
			call := &ast.Term{Value: ast.Call{ast.NewTerm(e.Operator()), args[0]}}
			if ast.IsConstant(args[1].Value) {
				return tr.compare("equal", call, args[1])
			}
			v, ok := args[1].Value.(ast.Var)
			if !ok {
				break
			}
			if _, bound := tr.vars[v]; bound {
				break
			}
			return tr.bind(v, call)
		}
	case "internal.member_2":
		if len(args) == 2 {
			return tr.member(args[0], args[1])
		}
	case "startswith", "endswith", "contains":
		if len(args) == 2 {
			return tr.strOp(op, args[0], args[1])
		}
	case "strings.any_prefix_match", "strings.any_suffix_match":
		if len(args) == 2 {
			return tr.anyMatch(op, args[0], args[1])
		}
	case "regex.match":
		if len(args) == 2 {
			return tr.regex(args[0], args[1])
		}
	case "glob.match":
		if len(args) == 3 {
			return tr.glob(args[0], args[1], args[2])
		}
	case "net.cidr_contains":
		if len(args) == 2 {
			return tr.cidr(args[0], args[1])
		}
	case "guardd.signature", "guardd.query_signature", "guardd.text_signature",
		"guardd.sqli", "guardd.xss", "guardd.query_sqli", "guardd.query_xss", "guardd.text_injection":
		return tr.guarddCall(op, args)
	}
	return nil, condSig{}, unsup("built-in %s with %d operands is not compiled natively", op, len(args))
}

// operand resolves an input reference, a bound variable or lower/upper of one.
func (tr *translator) operand(t *ast.Term) (*operand, error) {
	switch v := t.Value.(type) {
	case ast.Var:
		if o, ok := tr.vars[v]; ok {
			tr.used = append(tr.used, usedOperand{o: o})
			return o, nil
		}
		return nil, unsup("variable %v", v)
	case ast.Ref:
		o, err := tr.inputRef(v)
		if err == nil {
			tr.used = append(tr.used, usedOperand{o: o})
		}
		return o, err
	case ast.Call:
		if len(v) != 2 {
			return nil, unsup("call %v", v)
		}
		name := v[0].String()
		if name != "lower" && name != "upper" {
			return nil, unsup("call %v", v)
		}
		n := len(tr.used)
		inner, err := tr.operand(v[1])
		if err != nil {
			return nil, err
		}
		for i := n; i < len(tr.used); i++ {
			tr.used[i].viaCall = true
		}
		if inner.typ != tString || inner.fold != foldNone {
			return nil, unsup("%v of a non-string or folded value", name)
		}
		o := *inner
		o.base = inner
		o.fold = foldLower
		if name == "upper" {
			o.fold = foldUpper
		}
		o.slot = slotFor(name + "(" + inner.c.String() + ")")
		return &o, nil
	}
	return nil, unsup("operand %v", t)
}

func (tr *translator) inputRef(ref ast.Ref) (*operand, error) {
	if !ref.HasPrefix(ast.InputRootRef) || len(ref) < 2 {
		return nil, unsup("reference %v outside input", ref)
	}
	segs := make([]string, 0, len(ref)-1)
	for _, t := range ref[1:] {
		s, ok := t.Value.(ast.String)
		if !ok {
			return nil, unsup("reference %v with a non-constant segment", ref)
		}
		segs = append(segs, string(s))
	}
	var name string
	switch {
	case len(segs) == 3 && segs[0] == "http" && (segs[1] == "headers" || segs[1] == "cookies" || segs[1] == "args" || segs[1] == "anomalies"):
		name = "http." + segs[1] + "[" + strconv.Quote(segs[2]) + "]"
	case len(segs) == 2 && segs[0] == "log":
		name = "log[" + strconv.Quote(segs[1]) + "]"
	default:
		name = strings.Join(segs, ".")
	}
	c, err := characteristics.Parse(name)
	if err != nil || !slices.Equal(c.Path(), segs) {
		return nil, unsup("reference %v is not a characteristic", ref)
	}
	o := &operand{c: c, kind: c.Kind(), slot: -1}
	switch o.kind {
	case characteristics.KindNumber:
		o.typ = tNumber
		if strings.HasPrefix(name, "log[") || strings.HasPrefix(name, "http.headers[") || strings.HasPrefix(name, "http.cookies[") {
			o.typ = tString
		}
	case characteristics.KindAddr, characteristics.KindPrefix:
		o.slot = slotFor(c.String())
	default:
		// Derived values (normalised fields, arguments, the TLS client
		// named from the JA4) are cached per event: reading one again
		// costs a slot check, not a lookup.
		if strings.HasPrefix(name, "http.norm.") || strings.HasPrefix(name, "http.args[") || name == "tls.client" {
			o.slot = slotFor(c.String())
		}
		o.ja4 = name == "tls.client"

	}
	return o, nil
}

func (tr *translator) bind(v ast.Var, t *ast.Term) (cond, condSig, error) {
	o, err := tr.operand(t)
	if err != nil {
		return nil, condSig{}, err
	}
	tr.vars[v] = o
	tr.shape = &shapeInfo{} // presence
	return func(e *characteristics.Event, st *state) bool { return o.present(e, st) }, condSig{}, nil
}

// truthy compiles a bare term: true when defined and not false.
func (tr *translator) truthy(t *ast.Term) (cond, condSig, error) {
	if b, ok := t.Value.(ast.Boolean); ok {
		tr.shape = &shapeInfo{}
		if b {
			return nil, condSig{}, nil
		}
		return func(*characteristics.Event, *state) bool { return false }, condSig{}, nil
	}
	if ref, ok := t.Value.(ast.Ref); ok && ref.HasPrefix(ast.DefaultRootRef) && tr.support != nil {
		p, err := tr.support.pred(ref.String())
		if err != nil {
			return nil, condSig{}, err
		}
		tr.supported = p
		return p.eval, condSig{}, nil // cached only by its meaning (supportOrigin): its path is not
	}
	o, err := tr.operand(t)
	if err != nil {
		return nil, condSig{}, err
	}
	tr.shape = &shapeInfo{} // presence
	if o.slot < 0 && o.fold == foldNone {
		// Read directly: presence tests are most of the conditions a plan
		// computes on every event.
		c := o.c
		if o.typ == tNumber {
			return func(e *characteristics.Event, _ *state) bool { _, ok := c.Num(e); return ok }, condSig{}, nil
		}
		return func(e *characteristics.Event, _ *state) bool { _, ok := c.Str(e); return ok }, condSig{}, nil
	}
	return func(e *characteristics.Event, st *state) bool { return o.present(e, st) }, condSig{}, nil
}

// rank orders Rego value types as ast.Compare does.
func rank(v ast.Value) (int, bool) {
	switch v.(type) {
	case ast.Null:
		return 0, true
	case ast.Boolean:
		return 1, true
	case ast.Number:
		return 2, true
	case ast.String:
		return 3, true
	}
	return 0, false
}

var mirror = map[string]string{"equal": "equal", "neq": "neq", "lt": "gt", "lte": "gte", "gt": "lt", "gte": "lte"}

func cmpHolds(op string, r int) bool {
	switch op {
	case "equal":
		return r == 0
	case "neq":
		return r != 0
	case "lt":
		return r < 0
	case "lte":
		return r <= 0
	case "gt":
		return r > 0
	case "gte":
		return r >= 0
	}
	return false
}

func (tr *translator) compare(op string, a, b *ast.Term) (cond, condSig, error) {
	if ast.IsConstant(a.Value) && !ast.IsConstant(b.Value) {
		a, b, op = b, a, mirror[op]
	}
	if !ast.IsConstant(b.Value) {
		return nil, condSig{}, unsup("comparison of two non-constant values")
	}
	o, err := tr.operand(a)
	if err != nil {
		return nil, condSig{}, err
	}
	cr, ok := rank(b.Value)
	if !ok {
		return nil, condSig{}, unsup("comparison with %v", b)
	}
	or := 3
	if o.typ == tNumber {
		or = 2
	}
	if cr != or {
		// Values of different types compare by type alone.
		tr.shape = &shapeInfo{} // presence
		holds := cmpHolds(op, or-cr)
		return func(e *characteristics.Event, st *state) bool { return holds && o.present(e, st) }, condSig{}, nil
	}
	var sig condSig
	if o.typ == tNumber {
		n, ok := b.Value.(ast.Number).Float64()
		if !ok {
			return nil, condSig{}, unsup("number %v out of range", b)
		}
		switch op {
		case "equal":
			return func(e *characteristics.Event, _ *state) bool { v, ok := o.num(e); return ok && v == n }, sig, nil
		case "neq":
			return func(e *characteristics.Event, _ *state) bool { v, ok := o.num(e); return ok && v != n }, sig, nil
		case "lt":
			return func(e *characteristics.Event, _ *state) bool { v, ok := o.num(e); return ok && v < n }, sig, nil
		case "lte":
			return func(e *characteristics.Event, _ *state) bool { v, ok := o.num(e); return ok && v <= n }, sig, nil
		case "gt":
			return func(e *characteristics.Event, _ *state) bool { v, ok := o.num(e); return ok && v > n }, sig, nil
		case "gte":
			return func(e *characteristics.Event, _ *state) bool { v, ok := o.num(e); return ok && v >= n }, sig, nil
		}
	}
	s := string(b.Value.(ast.String))
	sig = condSig{op: op, key: a.String(), s: s, o: o}
	if op == "equal" || op == "neq" {
		tr.shape = &shapeInfo{consts: []string{s}, at: whole}
	}
	if op == "equal" && o.kind == characteristics.KindAddr && o.fold == foldNone {
		// Compare addresses without formatting when s is in canonical form.
		if a, err := netip.ParseAddr(s); err == nil && a.String() == s {
			return func(e *characteristics.Event, _ *state) bool { return e.IP == a }, sig, nil
		}
	}
	return func(e *characteristics.Event, st *state) bool {
		v, ok := o.str(e, st)
		return ok && cmpHolds(op, strings.Compare(v, s))
	}, sig, nil
}

// collection returns the strings and numbers of a constant set, array or
// object (its values), or of a single constant.
func collection(v ast.Value) (strs []string, nums []float64, ok bool) {
	add := func(t *ast.Term) {
		switch x := t.Value.(type) {
		case ast.String:
			strs = append(strs, string(x))
		case ast.Number:
			if f, fok := x.Float64(); fok {
				nums = append(nums, f)
			} else {
				ok = false
			}
		}
	}
	ok = true
	switch c := v.(type) {
	case ast.Set:
		c.Foreach(add)
	case *ast.Array:
		c.Foreach(add)
	case ast.Object:
		c.Foreach(func(_, v *ast.Term) { add(v) })
	default:
		return nil, nil, false
	}
	return strs, nums, ok
}

func (tr *translator) member(x, coll *ast.Term) (cond, condSig, error) {
	if !ast.IsConstant(coll.Value) {
		return nil, condSig{}, unsup("membership in a non-constant collection")
	}
	o, err := tr.operand(x)
	if err != nil {
		return nil, condSig{}, err
	}
	strs, nums, ok := collection(coll.Value)
	if !ok {
		return nil, condSig{}, unsup("membership in %v", coll)
	}
	if o.typ == tNumber {
		return func(e *characteristics.Event, _ *state) bool {
			v, ok := o.num(e)
			return ok && slices.Contains(nums, v)
		}, condSig{}, nil
	}
	set := newStrSet(strs)
	tr.shape = &shapeInfo{consts: strs, at: whole}
	return func(e *characteristics.Event, st *state) bool {
		v, ok := o.str(e, st)
		return ok && set.has(v)
	}, condSig{}, nil
}

// strSet is a set of strings, bucketed by length: a lookup indexes the
// bucket of len(v) and compares the few strings there, cheaper than hashing
// for the small sets rules hold. Sets with long strings use a map.
type strSet struct {
	byLen [][]string
	m     map[string]struct{}
}

const strSetMaxLen = 128

func newStrSet(strs []string) *strSet {
	s := &strSet{}
	for _, x := range strs {
		if len(x) > strSetMaxLen {
			s.m = make(map[string]struct{}, len(strs))
			for _, x := range strs {
				s.m[x] = struct{}{}
			}
			return s
		}
	}
	for _, x := range strs {
		for len(s.byLen) <= len(x) {
			s.byLen = append(s.byLen, nil)
		}
		if !slices.Contains(s.byLen[len(x)], x) {
			s.byLen[len(x)] = append(s.byLen[len(x)], x)
		}
	}
	return s
}

func (s *strSet) has(v string) bool {
	if s.m != nil {
		_, ok := s.m[v]
		return ok
	}
	if len(v) >= len(s.byLen) {
		return false
	}
	for _, x := range s.byLen[len(v)] {
		if x == v {
			return true
		}
	}
	return false
}

func constString(t *ast.Term) (string, bool) {
	s, ok := t.Value.(ast.String)
	return string(s), ok
}

func (tr *translator) strOp(op string, x, arg *ast.Term) (cond, condSig, error) {
	s, ok := constString(arg)
	if !ok {
		return nil, condSig{}, unsup("%s with a non-constant or non-string argument", op)
	}
	o, err := tr.operand(x)
	if err != nil {
		return nil, condSig{}, err
	}
	tr.shape = &shapeInfo{consts: []string{s}, at: anchorOf(op)}
	if o.typ != tString {
		// A number operand is a type error in OPA: the expression is undefined.
		return func(*characteristics.Event, *state) bool { return false }, condSig{}, nil
	}
	sig := condSig{op: op, key: x.String(), s: s, o: o}
	var f func(string, string) bool
	switch op {
	case "startswith":
		f = strings.HasPrefix
	case "endswith":
		f = strings.HasSuffix
	default:
		if o.fold == foldLower {
			return containsCond(o, []string{s}), sig, nil
		}
		f = strings.Contains
	}
	return func(e *characteristics.Event, st *state) bool {
		v, ok := o.str(e, st)
		return ok && f(v, s)
	}, sig, nil
}

func (tr *translator) anyMatch(op string, x, arg *ast.Term) (cond, condSig, error) {
	if !ast.IsConstant(arg.Value) {
		return nil, condSig{}, unsup("%s with a non-constant argument", op)
	}
	var strs []string
	if s, ok := arg.Value.(ast.String); ok {
		strs = []string{string(s)}
	} else {
		var nums []float64
		var ok bool
		strs, nums, ok = collection(arg.Value)
		if !ok || len(nums) > 0 || countElems(arg.Value) != len(strs) {
			return nil, condSig{}, unsup("%s with non-string elements", op)
		}
	}
	if _, ok := arg.Value.(ast.Object); ok {
		return nil, condSig{}, unsup("%s over an object", op)
	}
	c, sig, err := tr.stringCond(x, newAffixSet(strs, op == "strings.any_suffix_match").match)
	tr.shape = &shapeInfo{consts: strs, at: anchorOf(op)}
	return c, sig, err
}

// stringCond is the condition that x is a string that match accepts. A
// non-string operand is a type error in OPA, so the expression is undefined:
// false.
func (tr *translator) stringCond(x *ast.Term, match func(string) bool) (cond, condSig, error) {
	o, err := tr.operand(x)
	if err != nil {
		return nil, condSig{}, err
	}
	if o.typ != tString {
		return func(*characteristics.Event, *state) bool { return false }, condSig{}, nil
	}
	return func(e *characteristics.Event, st *state) bool {
		v, ok := o.str(e, st)
		return ok && match(v)
	}, condSig{}, nil
}

func countElems(v ast.Value) int {
	switch c := v.(type) {
	case ast.Set:
		return c.Len()
	case *ast.Array:
		return c.Len()
	}
	return -1
}

// affixSet matches any of a set of prefixes (or suffixes), bucketed by the
// byte at the offset (from the start, or from the end) that best separates
// them, so that a miss costs a table load and a hit compares a few strings.
// Paths share their first byte, '/', so the offset is often 1.
type affixSet struct {
	suffix  bool
	empty   bool // "" matches everything
	pos     int
	short   []string // shorter than pos+1: always compared
	buckets [256][]string
}

func newAffixSet(strs []string, suffix bool) *affixSet {
	a := &affixSet{suffix: suffix}
	var uniq []string
	for _, s := range strs {
		if s == "" {
			a.empty = true
		} else if !slices.Contains(uniq, s) {
			uniq = append(uniq, s)
		}
	}
	best := -1
	for pos := 0; pos < 4; pos++ {
		var seen [256]bool
		distinct, short := 0, 0
		for _, s := range uniq {
			if len(s) <= pos {
				short++
				continue
			}
			b := a.key(s, pos)
			if !seen[b] {
				seen[b] = true
				distinct++
			}
		}
		if score := distinct - 2*short; score > best {
			best, a.pos = score, pos
		}
	}
	for _, s := range uniq {
		if len(s) <= a.pos {
			a.short = append(a.short, s)
			continue
		}
		b := a.key(s, a.pos)
		a.buckets[b] = append(a.buckets[b], s)
	}
	return a
}

func (a *affixSet) key(s string, pos int) byte {
	if a.suffix {
		return s[len(s)-1-pos]
	}
	return s[pos]
}

func (a *affixSet) has(v, s string) bool {
	if a.suffix {
		return strings.HasSuffix(v, s)
	}
	return strings.HasPrefix(v, s)
}

func (a *affixSet) match(v string) bool {
	if a.empty {
		return true
	}
	for _, s := range a.short {
		if a.has(v, s) {
			return true
		}
	}
	if len(v) <= a.pos {
		return false
	}
	for _, s := range a.buckets[a.key(v, a.pos)] {
		if a.has(v, s) {
			return true
		}
	}
	return false
}

func (tr *translator) regex(pat, x *ast.Term) (cond, condSig, error) {
	p, ok := constString(pat)
	if !ok {
		return nil, condSig{}, unsup("regex.match with a non-constant pattern")
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return nil, condSig{}, unsup("regex.match with an invalid pattern: %v", err)
	}
	return tr.stringCond(x, re.MatchString)
}

func (tr *translator) glob(pat, delims, x *ast.Term) (cond, condSig, error) {
	p, ok := constString(pat)
	if !ok {
		return nil, condSig{}, unsup("glob.match with a non-constant pattern")
	}
	// OPA: null means no delimiters, an empty array means ".".
	var ds []rune
	switch d := delims.Value.(type) {
	case ast.Null:
	case *ast.Array:
		if !ast.IsConstant(d) {
			return nil, condSig{}, unsup("glob.match with non-constant delimiters")
		}
		var bad bool
		d.Foreach(func(t *ast.Term) {
			s, ok := t.Value.(ast.String)
			if !ok || utf8.RuneCountInString(string(s)) != 1 {
				bad = true
				return
			}
			r, _ := utf8.DecodeRuneInString(string(s))
			ds = append(ds, r)
		})
		if bad {
			return nil, condSig{}, unsup("glob.match with delimiters that are not single characters")
		}
		if len(ds) == 0 {
			ds = []rune{'.'}
		}
	default:
		return nil, condSig{}, unsup("glob.match with delimiters %v", delims)
	}
	g, err := glob.Compile(p, ds...)
	if err != nil {
		return nil, condSig{}, unsup("glob.match with an invalid pattern: %v", err)
	}
	return tr.stringCond(x, g.Match)
}

func (tr *translator) cidr(netT, x *ast.Term) (cond, condSig, error) {
	s, ok := constString(netT)
	if !ok {
		return nil, condSig{}, unsup("net.cidr_contains with a non-constant network")
	}
	p, err := netip.ParsePrefix(s)
	if err != nil || p.Addr().Is4In6() || p.Addr().Zone() != "" {
		return nil, condSig{}, unsup("net.cidr_contains with network %q", s)
	}
	p = p.Masked()
	o, err := tr.operand(x)
	if err != nil {
		return nil, condSig{}, err
	}
	if o.kind != characteristics.KindAddr || o.fold != foldNone {
		return nil, condSig{}, unsup("net.cidr_contains of %v; only input.ip.src is compiled natively", x)
	}
	if p.Addr().Is4() {
		return func(e *characteristics.Event, _ *state) bool {
			return e.IP.Zone() == "" && p.Contains(e.IP.Unmap())
		}, condSig{}, nil
	}
	return func(e *characteristics.Event, _ *state) bool {
		return e.IP.Is6() && !e.IP.Is4In6() && e.IP.Zone() == "" && p.Contains(e.IP)
	}, condSig{}, nil
}

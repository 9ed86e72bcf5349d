package rules

import (
	"fmt"
	"hash/maphash"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/types"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/characteristics/signature"
)

// guardd's own built-ins, registered with OPA for rule tests and fallback
// evaluation, and compiled natively (translator.guarddCall) with their result
// computed once per event and operand, shared by every rule that asks:
//
//	guardd.signature(s, classes)  s holds a fragment of one of the payload classes
//	                              (signature.ClassNames, several separated by |)
//	guardd.query_signature(q, classes)  the same over the arguments of the raw query q
//	                              that are not free text, with the query's shape
//	                              (signature.ScanQuery)
//	guardd.text_signature(q, classes)   the same over its free-text arguments (a
//	                              search box, a dashboard's query language)
//	guardd.sqli(s), guardd.xss(s)               libinjection over s
//	guardd.query_sqli(q), guardd.query_xss(q)   libinjection over each decoded value of the raw
//	                                            query q but the free-text ones
//	guardd.text_injection(q)                    libinjection (SQL or XSS) over the free-text ones
var guarddUnary = map[string]func(string) bool{
	"guardd.sqli":           signature.SQLi,
	"guardd.xss":            signature.XSS,
	"guardd.query_sqli":     signature.QuerySQLi,
	"guardd.query_xss":      signature.QueryXSS,
	"guardd.text_injection": signature.TextInjection,
}

// guarddScans are the built-ins that return a class mask: what a field or
// a query holds.
var guarddScans = map[string]func(string) signature.Mask{
	"guardd.signature":       signature.Scan,
	"guardd.query_signature": signature.ScanQuery,
	"guardd.text_signature":  signature.ScanQueryText,
}

func init() {
	for name, scan := range guarddScans {
		rego.RegisterBuiltin2(&rego.Function{
			Name:        name,
			Description: "Reports whether the string holds a fragment of one of the attack payload classes (" + strings.Join(signature.ClassNames(), ", ") + "; several separated by |), ASCII case ignored.",
			Decl:        types.NewFunction(types.Args(types.Named("s", types.S), types.Named("class", types.S)), types.Named("result", types.B)),
			Memoize:     true,
		}, func(_ rego.BuiltinContext, s, class *ast.Term) (*ast.Term, error) {
			str, ok1 := s.Value.(ast.String)
			cl, ok2 := class.Value.(ast.String)
			if !ok1 || !ok2 {
				return nil, fmt.Errorf("%s: want two strings", name)
			}
			m, ok := signature.ParseClasses(string(cl))
			if !ok {
				return nil, fmt.Errorf("%s: unknown class in %q; accepted: %s, separated by |", name, cl, strings.Join(signature.ClassNames(), ", "))
			}
			return ast.BooleanTerm(scan(string(str))&m != 0), nil
		})
	}
	for name, f := range guarddUnary {
		rego.RegisterBuiltin1(&rego.Function{
			Name:        name,
			Description: "libinjection over the string (" + name + ")",
			Decl:        types.NewFunction(types.Args(types.Named("s", types.S)), types.Named("result", types.B)),
			Memoize:     true,
		}, func(_ rego.BuiltinContext, s *ast.Term) (*ast.Term, error) {
			str, ok := s.Value.(ast.String)
			if !ok {
				return nil, fmt.Errorf("%s: want a string", name)
			}
			return ast.BooleanTerm(f(string(str))), nil
		})
	}
}

// operandName names o's value for a cache slot.
func operandName(o *operand) string {
	switch o.fold {
	case foldLower:
		return "lower(" + o.c.String() + ")"
	case foldUpper:
		return "upper(" + o.c.String() + ")"
	}
	return o.c.String()
}

// guarddCall compiles a call of one of guardd's built-ins. Its result (the
// whole class mask for guardd.signature) is cached per event in a slot of
// the operand, so the field is scanned once whatever the number of rules and
// classes asking.
func (tr *translator) guarddCall(op string, args []*ast.Term) (cond, condSig, error) {
	var bit signature.Mask = 1
	var slotKey string
	var compute func(string) signature.Mask
	switch {
	case guarddScans[op] != nil:
		if len(args) != 2 {
			return nil, condSig{}, unsup("%s with %d operands", op, len(args))
		}
		cl, ok := constString(args[1])
		if !ok {
			return nil, condSig{}, unsup("%s with a non-constant class", op)
		}
		m, ok := signature.ParseClasses(cl)
		if !ok {
			return nil, condSig{}, unsup("%s: unknown class in %q; accepted: %s, separated by |", op, cl, strings.Join(signature.ClassNames(), ", "))
		}
		bit = m
		slotKey = op
		compute = guarddScans[op]
	case guarddUnary[op] != nil:
		if len(args) != 1 {
			return nil, condSig{}, unsup("%s with %d operands", op, len(args))
		}
		f := guarddUnary[op]
		slotKey = op
		compute = func(s string) signature.Mask {
			if f(s) {
				return 1
			}
			return 0
		}
	default:
		return nil, condSig{}, unsup("built-in %s", op)
	}
	n := len(tr.used)
	o, err := tr.operand(args[0])
	if err != nil {
		return nil, condSig{}, err
	}
	for i := n; i < len(tr.used); i++ {
		tr.used[i].viaCall = true
	}
	switch op {
	case "guardd.signature":
		tr.shape = &shapeInfo{signature: true}
	case "guardd.xss":
		tr.shape = &shapeInfo{xss: true}
	}
	if o.typ != tString {
		return func(*characteristics.Event, *state) bool { return false }, condSig{}, nil
	}
	slot := slotFor(slotKey + "(" + operandName(o) + ")")
	// A field whose conditions a plan remembers per value needs no memo of
	// its own scans.
	memo := guarddScans[slotKey] != nil && sourceOf(o.c) == srcNone
	salt := maphash.String(sigSeed, slotKey) // one value scanned by two built-ins is two entries
	return func(e *characteristics.Event, st *state) bool {
		if slot >= len(st.gens) {
			st.grow(slot)
		}
		if st.gens[slot] != st.gen {
			v, ok := o.str(e, st)
			var m signature.Mask
			if ok && v != "" {
				if memo {
					m = st.scan(v, salt, compute)
				} else {
					m = compute(v)
				}
			}
			st.gens[slot], st.oks[slot], st.masks[slot] = st.gen, ok, m
		}
		return st.oks[slot] && st.masks[slot]&bit != 0
	}, condSig{}, nil
}

// sigMemoMin is the shortest value whose scan is remembered across events:
// user agents, referers and paths repeat, and hashing one costs a fraction
// of scanning it.
const sigMemoMin = 12

// sigMemoSize is the number of remembered scans per goroutine (a
// direct-mapped table of 64-bit hashes, 64 KiB).
const sigMemoSize = 4096

// sigSeed keys the hashes of remembered scans; it is random per process, so
// no one can make two values collide on purpose.
var sigSeed = maphash.MakeSeed()

// scan returns compute(v), remembering results across events by a 64-bit
// keyed hash of v (mixed with salt, which names compute) and its length.
func (st *state) scan(v string, salt uint64, compute func(string) signature.Mask) signature.Mask {
	if len(v) < sigMemoMin {
		return compute(v)
	}
	if st.sigMemo == nil {
		st.sigMemo = new([sigMemoSize]sigMemoEntry)
	}
	h := (maphash.String(sigSeed, v) ^ salt) | 1 // 0 marks an empty entry
	e := &st.sigMemo[h%sigMemoSize]
	if e.hash == h && e.len == uint32(len(v)) {
		return e.mask
	}
	m := compute(v)
	*e = sigMemoEntry{hash: h, len: uint32(len(v)), mask: m}
	return m
}

type sigMemoEntry struct {
	hash uint64
	len  uint32
	mask signature.Mask
}

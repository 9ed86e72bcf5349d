package rules

import (
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/guardd/guardd/characteristics"
)

// sessionRef is input.session, the session.* characteristics.
var sessionRef = ast.MustParseRef("input.session")

// readsSession reports whether rule r, defined by module m, may read
// input.session: a reference to it, to the whole of input (input bound to
// a variable, or an import of it), or to data outside the rule's own package
// and the configuration's constants (a library could read anything), or a
// session characteristic in its key, score or distinct value. The pipeline
// keeps sessions only for a rule set that has such a rule.
func readsSession(m *ast.Module, r *Rule) bool {
	session := func(c characteristics.Characteristic) bool { return c.Path()[0] == "session" }
	for _, c := range r.Characteristics {
		if session(c) {
			return true
		}
	}
	for _, c := range []*characteristics.Characteristic{r.Score, r.Distinct} {
		if c != nil && session(*c) {
			return true
		}
	}
	for _, imp := range m.Imports {
		ref, ok := imp.Path.Value.(ast.Ref)
		if ok && (ref.HasPrefix(ast.InputRootRef) || ref.HasPrefix(ast.DefaultRootRef) && !ref.HasPrefix(configRef)) {
			return true
		}
	}
	reads := false
	ast.WalkRefs(m, func(ref ast.Ref) bool {
		switch {
		case ref.HasPrefix(sessionRef):
			reads = true
		case ref.HasPrefix(ast.InputRootRef):
			// input or input[x]: the session may be among what it reads.
			if len(ref) < 2 {
				reads = true
			} else if _, ok := ref[1].Value.(ast.String); !ok {
				reads = true
			}
		case ref.HasPrefix(ast.DefaultRootRef):
			if !ref.HasPrefix(m.Package.Path) && !ref.HasPrefix(configRef) {
				reads = true
			}
		}
		return reads
	})
	return reads
}

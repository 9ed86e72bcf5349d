package rules

import (
	"github.com/open-policy-agent/opa/v1/ast"
)

// requestPaths are the input paths known when a request arrives, as
// characteristics.KnownAtRequest says: a reference that starts with one of
// them (http.headers["x"], ip.src) reads only what the decision API sees.
var requestPaths = [][]string{
	{"ip", "src"}, {"ip", "prefix"}, {"ip", "asnum"}, {"ip", "country"}, {"ip", "port"},
	{"http", "host"}, {"http", "method"}, {"http", "path"}, {"http", "query"},
	{"http", "user_agent"}, {"http", "referer"}, {"http", "headers"}, {"http", "cookies"},
	{"http", "norm"}, {"http", "args"}, {"http", "anomalies"}, {"time"},
	{"bot", "name"}, {"bot", "verified"}, {"bot", "pending"},
}

// requestTime reports whether rule r, defined by module m, can be counted
// when a request arrives rather than from its log line: its expressions,
// key and score read only what is known then. It is conservative: an
// import, a reference to data outside the rule's own package (a library
// could read anything), or a reference to input that does not reach a
// known request path (input, input.http bound to a variable) makes it false.
func requestTime(m *ast.Module, r *Rule) bool {
	ok, _, _ := requestTimeWhy(m, r)
	return ok
}

// requestTimeWhy is requestTime, saying what is not known at request time
// and on which line (0: the METADATA's).
func requestTimeWhy(m *ast.Module, r *Rule) (ok bool, line int, why string) {
	for _, c := range r.Characteristics {
		if !c.KnownAtRequest() {
			return false, 0, "characteristic " + c.String() + " is not known when a request arrives"
		}
	}
	if r.Score != nil && !r.Score.KnownAtRequest() {
		return false, 0, "score " + r.Score.String() + " is not known when a request arrives"
	}
	if r.Distinct != nil && !r.Distinct.KnownAtRequest() {
		return false, 0, "distinct " + r.Distinct.String() + " is not known when a request arrives"
	}
	for _, imp := range m.Imports {
		if ref, ok := imp.Path.Value.(ast.Ref); ok && (ref.HasPrefix(ast.InputRootRef) || ref.HasPrefix(ast.DefaultRootRef)) {
			return false, locRow(imp.Location), "import " + ref.String() + " may read anything"
		}
	}
	ok = true
	ast.WalkRefs(m, func(ref ast.Ref) bool {
		switch {
		case ref.HasPrefix(ast.InputRootRef):
			if !knownAtRequest(ref[1:]) {
				ok, why = false, ref.String()+" is not known when a request arrives"
			}
		case ref.HasPrefix(ast.DefaultRootRef):
			// The configuration's constants (dataModule) are known at load.
			if !ref.HasPrefix(m.Package.Path) && !ref.HasPrefix(configRef) {
				ok, why = false, ref.String()+" is outside the rule's package and may read anything"
			}
		}
		if !ok && len(ref) > 0 {
			line = locRow(ref[0].Location)
		}
		return !ok
	})
	return ok, line, why
}

// configRef is data.guardd.config, the configuration's constants.
var configRef = ast.MustParseRef("data." + dataPackage)

func locRow(l *ast.Location) int {
	if l == nil {
		return 0
	}
	return l.Row
}

// knownAtRequest reports whether the input path p starts with one of
// requestPaths, every step of that prefix a constant string.
func knownAtRequest(p ast.Ref) bool {
next:
	for _, want := range requestPaths {
		if len(p) < len(want) {
			continue
		}
		for i, w := range want {
			if s, ok := p[i].Value.(ast.String); !ok || string(s) != w {
				continue next
			}
		}
		return true
	}
	return false
}

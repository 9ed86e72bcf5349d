package rules

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/guardd/guardd/characteristics"
)

// TestConditionCache checks that conditions cached per event by their text
// agree with OPA: equal conditions of several rules share a result,
// different ones (another constant, a negation, lower against upper) do not
// leak into each other, and the cache is renewed on every event of a reused
// Matches.
func TestConditionCache(t *testing.T) {
	bodies := []string{
		`input.http.method in {"GET", "HEAD"}; input.http.path == "/a"`,
		`input.http.method in {"GET", "HEAD"}; input.http.path == "/b"`,
		`input.http.method in {"GET", "HEAD"}`,
		`not input.http.method in {"GET", "HEAD"}`,
		`x := lower(input.http.path); x == "/a"`,
		`x := upper(input.http.path); x == "/a"`,
		`input.http.path == "/b"`,
		`some p in {"/a", "/c"}; input.http.path == p`,
	}
	fsys := fstest.MapFS{}
	for i, body := range bodies {
		mod := strings.Replace(opModule(body), "package guardd.rules.op", fmt.Sprintf("package guardd.rules.op%d", i), 1)
		fsys[fmt.Sprintf("op%d.rego", i)] = &fstest.MapFile{Data: []byte(mod)}
	}
	native, err := Load(fsys, Options{})
	if err != nil {
		t.Fatal(err)
	}
	opa, err := Load(fsys, Options{DisableNative: true, EvalTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range native.Rules() {
		if !r.Native {
			t.Fatalf("%s did not compile natively", r.File)
		}
	}
	var mn, mo Matches // reused across events, as the pipeline does
	for _, ev := range []struct{ method, path string }{
		{"GET", "/a"}, {"GET", "/b"}, {"POST", "/a"}, {"HEAD", "/A"}, {"GET", "/c"}, {"GET", "/a"},
	} {
		var e characteristics.Event
		e.Method, e.Path = ev.method, ev.path
		native.Eval(&e, &mn)
		opa.Eval(&e, &mo)
		for i, r := range native.Rules() {
			if mn.Count(i) != mo.Count(i) {
				t.Errorf("%s %s, %s: native %v, OPA %v", ev.method, ev.path, r.File, mn.Count(i), mo.Count(i))
			}
		}
	}
}

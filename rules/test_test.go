package rules

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/guardd/guardd/rules/builtin"
)

// TestBuiltinRegoTests fails `go test` when a Rego test of the built-in
// library fails.
func TestBuiltinRegoTests(t *testing.T) {
	res, err := Test(builtin.FS)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) == 0 {
		t.Fatal("no Rego tests found in the built-in library")
	}
	tested := map[string]bool{}
	for _, r := range res {
		if !r.Pass {
			t.Errorf("%s:%d: %s.%s failed: %v", r.File, r.Line, r.Package, r.Name, r.Err)
		}
		tested[strings.TrimSuffix(strings.TrimPrefix(r.Package, "data.guardd.rules."), "_test")] = true
	}
	s, err := Builtin(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range s.Rules() {
		if !tested[r.Name] {
			t.Errorf("built-in rule %s has no Rego tests (want %s_test.rego)", r.Name, r.Name)
		}
	}
}

func TestTestReportsFailures(t *testing.T) {
	fsys := fstest.MapFS{
		"r.rego": {Data: []byte(opModule(`input.http.status == 404`))},
		"r_test.rego": {Data: []byte(`package guardd.rules.op_test

import data.guardd.rules.op

test_pass if op.count with input as {"http": {"status": 404}}

test_fail if op.count with input as {"http": {"status": 200}}

test_error if {
	x := 1 / 0
	x == 1
}
`)},
	}
	res, err := Test(fsys)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, r := range res {
		got[r.Name] = r.Pass
	}
	want := map[string]bool{"test_pass": true, "test_fail": false, "test_error": false}
	for name, pass := range want {
		if p, ok := got[name]; !ok || p != pass {
			t.Errorf("%s: pass=%v (present %v), want %v", name, p, ok, pass)
		}
	}
}

func TestTestRejectsForbiddenBuiltins(t *testing.T) {
	fsys := fstest.MapFS{"x_test.rego": {Data: []byte("package guardd.rules.x_test\n\ntest_now if time.now_ns() > 0\n")}}
	_, err := Test(fsys)
	if err == nil || !strings.Contains(err.Error(), "x_test.rego:3: built-in time.now_ns is not allowed") {
		t.Fatalf("err = %v, want a located time.now_ns error", err)
	}
}

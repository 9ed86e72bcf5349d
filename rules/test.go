package rules

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"
)

// TestResult is the outcome of one Rego test rule (test_*).
type TestResult struct {
	Package  string // e.g. data.guardd.rules.login_bruteforce_test
	Name     string // e.g. test_blocks_after_failures
	File     string
	Line     int
	Pass     bool
	Skip     bool  // a todo_test_ rule
	Err      error // an evaluation error (the test fails)
	Duration time.Duration
}

// testTimeout bounds each Rego test.
const testTimeout = 10 * time.Second

// Test runs the Rego unit tests (test_* rules, usually in *_test.rego files)
// of the rules under fsys, as `opa test` does, with the same restricted
// built-ins as Load. It returns an error when the files do not parse or
// compile; failing tests are reported in the results.
func Test(fsys fs.FS) ([]TestResult, error) {
	var errs errorList
	srcs, err := readFS(fsys, true, &errs)
	if err != nil {
		return nil, err
	}
	caps, removed := capabilities()
	mods := map[string]*ast.Module{}
	for _, src := range srcs {
		if src.module == nil {
			continue
		}
		checkBuiltins(&errs, src, removed)
		mods[src.file] = src.module
	}
	if len(errs) > 0 {
		return nil, errs.err()
	}
	data, err := dataModule(nil, 0)
	if err != nil {
		return nil, err
	}
	mods[data.Package.Location.File] = data
	c := ast.NewCompiler().WithCapabilities(caps).WithDefaultRegoVersion(ast.RegoV1)
	ctx := context.Background()
	ch, err := tester.NewRunner().
		SetCompiler(c).
		SetTimeout(testTimeout).
		SetDefaultRegoVersion(ast.RegoV1).
		SetModules(mods).
		RunTests(ctx, nil)
	if err != nil {
		addASTErrors(&errs, "", err)
		return nil, errs.err()
	}
	var out []TestResult
	for r := range ch {
		tr := TestResult{
			Package:  r.Package,
			Name:     r.Name,
			Pass:     r.Pass(),
			Skip:     r.Skip,
			Err:      r.Error,
			Duration: r.Duration,
		}
		if r.Location != nil {
			tr.File, tr.Line = r.Location.File, r.Location.Row
		}
		if r.Error != nil {
			tr.Pass = false
			tr.Err = fmt.Errorf("%s:%d: %s: %w", tr.File, tr.Line, tr.Name, r.Error)
		}
		out = append(out, tr)
	}
	slices.SortFunc(out, func(a, b TestResult) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}

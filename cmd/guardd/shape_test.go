package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines bounds a function of cmd/guardd: it parses flags and wires
// components; logic longer than this belongs in the package that owns it.
const maxFuncLines = 80

// TestCommandShape holds cmd/guardd to wiring: no function over
// maxFuncLines lines, and no diff of configuration fields (a reload's
// restart list is derived from the components' declarations, see
// config.Reloader), so no reflect.DeepEqual.
func TestCommandShape(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				from, to := fset.Position(n.Pos()), fset.Position(n.End())
				if lines := to.Line - from.Line + 1; lines > maxFuncLines {
					t.Errorf("%s: %s is %d lines, over %d: move its logic into the package that owns it", from, n.Name.Name, lines, maxFuncLines)
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "reflect" && n.Sel.Name == "DeepEqual" {
					t.Errorf("%s: reflect.DeepEqual: a reload diff belongs to config.Reload, driven by the components' declarations", fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
}

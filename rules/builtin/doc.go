// Package builtin holds guardd's built-in rule library: Rego rules, each with
// its *_test.rego, embedded in the binary. It promises only the files; the
// rules package loads and checks them. The rules and their thresholds are
// documented in docs/rules.md.
package builtin

import "embed"

// FS holds the rule files (*.rego) and their tests (*_test.rego).
//
//go:embed *.rego
var FS embed.FS

package main

import (
	"bytes"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/rules"
)

// TestHelpTopics: guardd help lists the topics; each topic's tables hold
// exactly what the code accepts (metadata keys, actions, characteristics),
// and docs/rules.md names them all too, so neither can drift from the code.
func TestHelpTopics(t *testing.T) {
	help := func(args ...string) (string, int) {
		var out, errb bytes.Buffer
		rc := dispatch(append([]string{"help"}, args...), &out, &errb)
		return out.String() + errb.String(), rc
	}
	out, rc := help()
	if rc != 0 {
		t.Fatalf("guardd help: exit %d", rc)
	}
	for name := range helpTopics {
		if !strings.Contains(out, "\n  "+name+" ") {
			t.Errorf("guardd help does not list topic %s:\n%s", name, out)
		}
	}

	if got, want := slices.Sorted(maps.Keys(ruleKeyHelp)), slices.Sorted(slices.Values(rules.MetadataKeys())); !slices.Equal(got, want) {
		t.Errorf("ruleKeyHelp has %v, the rule loader accepts %v", got, want)
	}
	if got, want := slices.Sorted(maps.Keys(actionHelp)), slices.Sorted(slices.Values(mitigation.Names())); !slices.Equal(got, want) {
		t.Errorf("actionHelp has %v, the actions are %v", got, want)
	}
	docs, err := os.ReadFile("../../docs/rules.md")
	if err != nil {
		t.Fatal(err)
	}
	out, rc = help("rules")
	if rc != 0 {
		t.Fatalf("guardd help rules: exit %d", rc)
	}
	for _, k := range rules.MetadataKeys() {
		if !strings.Contains(out, "\n  "+k+" ") {
			t.Errorf("guardd help rules lacks key %s", k)
		}
		if !bytes.Contains(docs, []byte("| `"+k+"` |")) {
			t.Errorf("docs/rules.md's metadata table lacks key %s", k)
		}
	}
	for _, want := range append(mitigation.Names(), rules.Algorithms...) {
		if !strings.Contains(out, want) {
			t.Errorf("guardd help rules does not name %s", want)
		}
	}
	out, _ = help("actions")
	for _, a := range mitigation.Names() {
		if !strings.Contains(out, "\n  "+a+" ") {
			t.Errorf("guardd help actions lacks %s", a)
		}
	}
	out, _ = help("characteristics")
	for _, c := range characteristics.Describe() {
		if !strings.Contains(out, "\n  "+c.Name+" ") || !strings.Contains(out, c.Input) {
			t.Errorf("guardd help characteristics lacks %s (%s)", c.Name, c.Input)
		}
		if !bytes.Contains(docs, []byte("`"+c.Name+"`")) || !bytes.Contains(docs, []byte("`"+c.Input)) {
			t.Errorf("docs/rules.md's input table lacks %s at %s", c.Name, c.Input)
		}
	}

	// A command's help is its -h; an unknown topic is an error that lists them.
	var want bytes.Buffer
	dispatch([]string{"status", "-h"}, &want, &want)
	if out, rc := help("status"); rc != 0 || out != want.String() {
		t.Errorf("guardd help status = %d %q, want %q", rc, out, want.String())
	}
	if out, rc := help("nonesuch"); rc != 2 || !strings.Contains(out, "help topics") {
		t.Errorf("guardd help nonesuch = %d %q", rc, out)
	}
}

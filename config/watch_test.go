package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestChanged(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "rules")
	os.MkdirAll(rules, 0o755)
	path := filepath.Join(dir, "guardd.yaml")
	os.WriteFile(path, []byte("rules: {dirs: ["+rules+"]}\n"), 0o644)
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	c := &Changed{Path: path}
	if c.Check(cfg) {
		t.Fatal("the first check reported a change")
	}
	if c.Check(cfg) {
		t.Fatal("nothing changed, change reported")
	}
	os.WriteFile(filepath.Join(rules, "a.rego"), []byte("package a\n"), 0o644)
	if !c.Check(cfg) {
		t.Fatal("a new rule file not noticed")
	}
	old := time.Now().Add(-time.Hour)
	os.WriteFile(filepath.Join(rules, "notes.txt"), []byte("x"), 0o644)
	if c.Check(cfg) {
		t.Fatal("a file that is not a rule reported")
	}
	os.WriteFile(path, []byte("rules: {dirs: ["+rules+"]}\nlog: {json: true}\n"), 0o644)
	os.Chtimes(path, old, old) // the size still differs
	if !c.Check(cfg) {
		t.Fatal("a changed configuration file not noticed")
	}
}

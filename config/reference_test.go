package config

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var updateRef = flag.Bool("update", false, "rewrite ../docs/configuration.md")

// TestReference fails when docs/configuration.md differs from what the
// configuration's types say (run with -update after a change), or when a
// top-level section has no entry in ReloadOf.
func TestReference(t *testing.T) {
	got, err := Reference("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(got, "\n") {
		if strings.HasPrefix(line, "| `") && strings.Count(strings.SplitN(line, "`", 3)[1], ".") == 0 {
			key := strings.SplitN(line, "`", 3)[1]
			if _, ok := ReloadOf[key]; !ok {
				t.Errorf("section %s has no entry in ReloadOf: say whether a reload applies it", key)
			}
		}
	}
	const path = "../docs/configuration.md"
	if *updateRef {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./config -run TestReference -update)", err)
	}
	if string(want) != got {
		t.Errorf("docs/configuration.md is out of date with the configuration's types: run go test ./config -run TestReference -update")
	}
}

package characteristics

import (
	"strings"
	"testing"
)

// TestDescribe: every characteristic has a line of help, and every name
// Describe gives (with a key for "name") is one Parse accepts.
func TestDescribe(t *testing.T) {
	infos := Describe()
	if len(infos) != len(Names()) {
		t.Fatalf("%d described, %d names", len(infos), len(Names()))
	}
	for _, in := range infos {
		if in.Doc == "" || in.Kind == "" || !strings.HasPrefix(in.Input, "input.") {
			t.Errorf("%+v: missing help", in)
		}
		key := "x"
		if strings.HasPrefix(in.Name, "http.anomalies") {
			key = "traversal"
		}
		name := strings.Replace(strings.Replace(in.Name, `["name"]`, `["`+key+`"]`, 1), "log.name", "log.x", 1)
		if _, err := Parse(name); err != nil {
			t.Errorf("%s: %v", in.Name, err)
		}
	}
}

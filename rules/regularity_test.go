package rules

import (
	"testing"
	"testing/fstest"
)

func TestLoadRegularity(t *testing.T) {
	for _, tc := range []struct {
		name, meta string
		want       Regularity
	}{
		{"flow", "#   regularity: {min_events: 20, max_cv: 0.15}\n", Regularity{MinEvents: 20, MaxCV: 0.15}},
		{"block", "#   regularity:\n#     min_events: 33\n#     max_cv: 1\n", Regularity{MinEvents: 33, MaxCV: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "# METADATA\n# title: x\n# custom:\n#   characteristics: [ip.src]\n#   distinct: http.path\n" +
				"#   period: 10m\n#   requests_per_period: 20\n" + tc.meta + "#   action: log\npackage guardd.rules.regular\n\ncount if input.http.method == \"GET\"\n"
			s, err := Load(fstest.MapFS{"regular.rego": {Data: []byte(src)}}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			r := s.Rules()[0]
			if r.Regularity == nil || *r.Regularity != tc.want || r.Distinct == nil {
				t.Fatalf("%+v", r.Regularity)
			}
		})
	}
}

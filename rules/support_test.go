package rules

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/guardd/guardd/characteristics"
)

// TestSupportRuleGroup: a support rule that partial evaluation keeps (for
// `not helper`), whose conditions all read one field, is a condition of
// that field's group, remembered per value as its conditions would be in
// the rule's own body; named by its meaning, two rules' helpers of the
// same body share one bit. A helper that reads two fields, or the path,
// stays computed per event. Every case agrees with OPA and with no memo,
// event after event.
func TestSupportRuleGroup(t *testing.T) {
	const words = `{"bot", "Crawl", "fetch"}`
	tests := []struct {
		name, helper string
		group        origin // srcNone: computed per event
	}{
		{"user agent words", "some w in " + words + "\n\tcontains(input.http.user_agent, w)", srcUA},
		{"user agent, two bodies", "startswith(input.http.user_agent, \"curl/\")\n}\n\nhelper if {\n\tendswith(input.http.user_agent, \")\")", srcUA},
		{"lower case of the referer", "some w in " + words + "\n\tcontains(lower(input.http.referer), w)", srcReferer},
		{"user agent and method", "input.http.method == \"POST\"\n\tcontains(input.http.user_agent, \"bot\")", srcNone},
		{"path", "some w in " + words + "\n\tcontains(input.http.path, w)", srcNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for i := range 2 {
				mod := strings.Replace(opModule("input.http.method == \"GET\"\n\tnot helper"), "package guardd.rules.op",
					fmt.Sprintf("package guardd.rules.op%d", i), 1) + "\nhelper if {\n\t" + tt.helper + "\n}\n"
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
			p := native.plan
			var bits []int
			for b, name := range p.names {
				if strings.HasPrefix(name, "not data.") {
					bits = append(bits, b)
				}
			}
			if len(bits) != 1 {
				t.Fatalf("helper conditions %d (%q), want 1 shared by both rules", len(bits), p.names)
			}
			var in origin
			for _, g := range p.groups {
				if b := bits[0]; b/64 == g.word && g.mask<<g.shift&(1<<(b%64)) != 0 {
					in = g.src
				}
			}
			if in != tt.group {
				t.Errorf("helper in group %d, want %d", in, tt.group)
			}
			var memo, none, mo Matches
			none.st.bits.noMemo = true
			for round := range 2 {
				for _, e := range []characteristics.Event{
					{Method: "GET", Path: "/", UserAgent: "Mozilla/5.0 (X11)"},
					{Method: "GET", Path: "/", UserAgent: "Googlebot/2.1"},
					{Method: "GET", Path: "/bot", UserAgent: "curl/8.0", Referer: "https://a.example/Crawl"},
					{Method: "POST", Path: "/fetch", UserAgent: "xbot"},
					{Method: "GET", Path: "/", UserAgent: "Mozilla/5.0 (X11)", Referer: "https://a.example/FETCH"},
					{Method: "GET", Path: "/fetch"},
					{Method: "GET", Path: "/"},
				} {
					native.Eval(&e, &memo)
					native.Eval(&e, &none)
					opa.Eval(&e, &mo)
					for i, r := range native.Rules() {
						if memo.Count(i) != mo.Count(i) || none.Count(i) != mo.Count(i) {
							t.Fatalf("round %d, %s %s ua %q referer %q: %s memo %v, no memo %v, OPA %v",
								round, e.Method, e.Path, e.UserAgent, e.Referer, r.Name, memo.Count(i), none.Count(i), mo.Count(i))
						}
					}
				}
			}
		})
	}
}

package rules

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/guardd/guardd/characteristics"
)

// FuzzNativeVsOPA compiles rules whose constants come from the fuzzer and
// checks that native predicates and OPA agree on events whose fields also
// come from the fuzzer: case folding of any Unicode, invalid UTF-8, empty
// strings, prefixes and suffixes of every length.
func FuzzNativeVsOPA(f *testing.F) {
	f.Add("/.env", "Mozilla/5.0 SQLMAP", "sqlmap", "/.")
	f.Add("/\u0130stanbul", "\u212aali", "k", "/i")
	f.Add("", "", "", "")
	f.Add("/a\xffb", "x\xff", "\xff", "b")
	f.Add("/wp-login.php", "nikto/2", "NIKTO", ".php")
	f.Add("/cgi-bin/.%2e/%2e%2e/etc/passwd", "${jndi:ldap://x}", "id=1' or '1'='1", "<script>alert(1)</script>")
	f.Add("/a%252e%252e/b%c0%ae", "() { :; }; /bin/sh", "a=%3Csvg/onload=alert(1)%3E", "select dining chairs")
	f.Fuzz(func(t *testing.T, path, ua, c1, c2 string) {
		if len(path)+len(ua)+len(c1)+len(c2) > 512 {
			return
		}
		q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		bodies := []string{
			fmt.Sprintf(`contains(lower(input.http.user_agent), %s)`, q(c1)),
			fmt.Sprintf(`some s in {%s, %s, "sqlmap"}; contains(lower(input.http.user_agent), s)`, q(c1), q(c2)),
			fmt.Sprintf(`some s in {%s, %s}; contains(input.http.path, s)`, q(c1), q(c2)),
			fmt.Sprintf(`startswith(lower(input.http.path), %s)`, q(c2)),
			fmt.Sprintf(`strings.any_prefix_match(input.http.path, [%s, %s, "/"])`, q(c1), q(c2)),
			fmt.Sprintf(`strings.any_suffix_match(upper(input.http.path), {%s, %s})`, q(c1), q(c2)),
			fmt.Sprintf(`input.http.user_agent in {%s, %s}`, q(c1), q(c2)),
			fmt.Sprintf(`some p in {%s, %s}; input.http.path == p`, q(c1), q(c2)),
			fmt.Sprintf(`input.http.path < %s`, q(c1)),
			fmt.Sprintf(`not lower(input.http.headers["x-test"]) == %s`, q(c2)),
			`guardd.signature(input.http.norm.path, "lfi|webshell|cve_probe|sensitive_file")`,
			`guardd.signature(input.http.norm.user_agent, "scanner_ua|log4shell")`,
			`not guardd.signature(input.http.norm.query, "cmdi")`,
			`guardd.query_sqli(input.http.query)`,
			`guardd.query_xss(input.http.query)`,
			`guardd.sqli(input.http.norm.path)`,
			`not guardd.xss(input.http.norm.user_agent)`,
			`input.http.anomalies.traversal`,
			`not input.http.anomalies.double_encoded`,
			fmt.Sprintf(`input.http.args.q == %s`, q(c2)),
			`startswith(input.http.norm.path, "/etc")`,
		}
		var e characteristics.Event
		e.Path, e.UserAgent, e.Status = path, ua, 200
		e.Query = "q=" + c2 + "&" + c1
		if c2 != "" {
			e.SetHeader("X-Test", c2)
		}
		fsys := fstest.MapFS{}
		for i, body := range bodies {
			mod := strings.Replace(opModule(body), "package guardd.rules.op", fmt.Sprintf("package guardd.rules.op%d", i), 1)
			fsys[fmt.Sprintf("op%d.rego", i)] = &fstest.MapFile{Data: []byte(mod)}
		}
		native, err := Load(fsys, Options{EvalTimeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		opa, err := Load(fsys, Options{DisableNative: true, EvalTimeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		var mn, mo Matches
		opa.Eval(&e, &mo)
		// Native evaluation with nothing remembered, then with the
		// event's values remembered, after another event through the
		// same Matches.
		other := characteristics.Event{Path: path + "/x", UserAgent: ua + "x", Query: e.Query, Status: 404}
		for round, ev := range []*characteristics.Event{&e, &other, &e} {
			native.Eval(ev, &mn)
			if ev != &e {
				continue
			}
			for i, r := range native.Rules() {
				if mn.Count(i) != mo.Count(i) {
					t.Errorf("%s (native %v, round %d): native %v, OPA %v on path %q ua %q", r.File, r.Native, round, mn.Count(i), mo.Count(i), path, ua)
				}
			}
		}
	})
}

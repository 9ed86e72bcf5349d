package rules

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/rules/builtin"
)

// differential evaluates native and OPA on n generated events and reports
// every disagreement.
func differential(t *testing.T, native, opa *Set, n int, seed uint64) {
	t.Helper()
	g := newEventGen(seed)
	var e characteristics.Event
	var mn, mo Matches
	hits := make([]int, len(native.Rules()))
	fails := 0
	for range n {
		g.next(&e)
		native.Eval(&e, &mn)
		opa.Eval(&e, &mo)
		for i, r := range native.Rules() {
			if mn.Count(i) != mo.Count(i) || mn.Mitigate(i) != mo.Mitigate(i) {
				fails++
				if fails < 5 {
					t.Errorf("rule %s: native count=%v mitigate=%v, OPA count=%v mitigate=%v\ninput: %v",
						r.Name, mn.Count(i), mn.Mitigate(i), mo.Count(i), mo.Mitigate(i), e.Input())
				}
			}
			if mo.Count(i) {
				hits[i]++
			}
		}
	}
	for i, r := range native.Rules() {
		t.Logf("rule %s: count held on %d of %d events", r.Name, hits[i], n)
	}
}

func TestBuiltinDifferential(t *testing.T) {
	native, err := Builtin(Options{})
	if err != nil {
		t.Fatal(err)
	}
	opa, err := Builtin(Options{DisableNative: true, EvalTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range native.Rules() {
		if !r.Native {
			t.Errorf("built-in rule %s is not native: %v", r.Name, r.Fallback)
		}
	}
	differential(t, native, opa, 4000, 1)
}

func opModule(body string) string {
	return `# METADATA
# custom:
#   characteristics: [ip.src]
#   period: 1m
#   requests_per_period: 10
#   action: log
package guardd.rules.op

count if {
	` + body + `
}

default sub := false

sub if input.http.headers["sec-fetch-dest"] in {"empty", "image"}
sub if startswith(input.http.path, "/api")
`
}

func TestNativeOps(t *testing.T) {
	tests := []struct {
		body   string
		native bool
	}{
		{`input.http.status >= 400`, true},
		{`input.http.status < 300`, true},
		{`input.http.status != 200`, true},
		{`input.http.status == "404"`, true},
		{`input.http.path > 5`, true},
		{`input.http.status < "a"`, true},
		{`input.http.method != "GET"`, true},
		{`input.http.path < "/m"`, true},
		{`"/m" <= input.http.path`, true},
		{`input.ip.src == "203.0.113.7"`, true},
		{`input.ip.src == "::ffff:10.9.8.7"`, true},
		{`input.ip.src == "fe80::1%eth0"`, true},
		{`input.ip.src != "10.1.2.3"`, true},
		{`startswith(input.ip.src, "10.")`, true},
		{`input.ip.prefix == "203.0.113.0/24"`, true},
		{`net.cidr_contains("10.0.0.0/8", input.ip.src)`, true},
		{`net.cidr_contains("2001:db8::/32", input.ip.src)`, true},
		{`net.cidr_contains("0.0.0.0/0", input.ip.src)`, true},
		{`net.cidr_contains("::/0", input.ip.src)`, true},
		{`input.http.headers["x-requested-with"]`, true},
		{`not input.http.headers["sec-fetch-dest"]`, true},
		{`input.http.headers["sec-fetch-dest"] in {"document", "iframe"}`, true},
		{`not input.http.headers["sec-fetch-dest"] in {"document", "iframe"}`, true},
		{`input.http.status in {401, 403, "404"}`, true},
		{`input.ip.asnum in [16509, 14061]`, true},
		{`input.http.method in {"a": "GET"}`, true},
		{`lower(input.http.user_agent) == "sqlmap"`, true},
		{`upper(input.http.method) == "GET"`, true},
		{`upper(input.http.path) == "/\u0130STANBUL"`, true},
		{`lower(input.http.path) == "/istanbul"`, true},
		{`contains(lower(input.http.user_agent), "sqlmap")`, true},
		{`contains(lower(input.http.path), "\ufffd")`, true},
		{`endswith(input.http.path, ".php")`, true},
		{`startswith(input.http.status, "4")`, true},
		{"regex.match(`^/(wp-|php)`, input.http.path)", true},
		{"regex.match(`(?i)bot`, input.http.user_agent)", true},
		{`glob.match("/api/*/items", ["/"], input.http.path)`, true},
		{`glob.match("*.example.com", null, input.http.host)`, true},
		{`glob.match("*.example.com", [], input.http.host)`, true},
		{`strings.any_prefix_match(input.http.path, ["/api/", "/graphql"])`, true},
		{`strings.any_suffix_match(input.http.path, "bak")`, true},
		{`strings.any_suffix_match(input.http.path, {"", "x"})`, true},
		{`input.log.upstream_status == "502"`, true},
		{`input.log.upstream_status == 502`, true},
		{`input.http.cookies.session`, true},
		{`input.http.cookies["session"] == "abca"`, true},
		{`input.tls.ja4 == "t13d1516h2_8daaf6152771_02713d6af862"`, true},
		{`input.http.request_time > 2.5`, true},
		{`input.http.bytes_sent <= 1000`, true},
		{`input.time > 1700040000`, true},
		{`input.ip.port > 30000`, true},
		{`input.source == "nginx_log"`, true},
		{`input.ip.country == "US"`, true},
		{`input.http.query`, true},
		{`input.http.ja4h`, true},
		{`x := lower(input.http.path); startswith(x, "/api"); not endswith(x, ".json")`, true},
		{`some s in {"/.env", "/.git", "config"}; contains(input.http.path, s)`, true},
		{`some p in {"/login", "/signin", "/"}; input.http.path == p`, true},
		{`some p in {"/wp", "/php", "/api"}; startswith(lower(input.http.path), p)`, true},
		{`some p in {".php", ".bak", "~"}; endswith(lower(input.http.path), p)`, true},
		{`input.http.method == "POST"; some p in {"/login", "/signin"}; input.http.path == p; input.http.status == 401`, true},
		{`input.http.method == "GET"; not sub`, true},
		{`sub`, true},
		{`input.ip.src.x`, false},
		{`object.get(input.http.headers, "accept", "") == "text/html"`, false},
		{`not startswith(input.http.headers["x-requested-with"], "XML")`, true},
		{`not lower(input.http.headers["sec-fetch-dest"]) == "document"`, true},
		{`not input.http.headers["sec-fetch-dest"] == "document"`, true},
		{`not input.http.query = "q=1&page=1"`, true},
		{`not net.cidr_contains("10.0.0.0/8", input.ip.src)`, true},
		{`input.http.path == input.http.referer`, false},
		{`trim_space(input.http.path) == "/"`, false},
		{`x := input.http.headers; x["accept"]`, true},
		// tls.client needs a JA4 (the plan adds input.tls.ja4 before a
		// condition that reads it, unless negated).
		{`input.tls.client != "library/curl"`, true},
		{`startswith(input.tls.client, "library/"); input.http.method == "GET"`, true},
		{`not input.tls.client == "library/curl"`, true},
		{`not startswith(input.tls.client, "library/")`, true},
	}
	for _, tc := range tests {
		t.Run(tc.body, func(t *testing.T) {
			fsys := fstest.MapFS{"op.rego": {Data: []byte(opModule(tc.body))}}
			native, err := Load(fsys, Options{EvalTimeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if got := native.Rules()[0].Native; got != tc.native {
				t.Errorf("Native = %v, want %v (%v)", got, tc.native, native.Rules()[0].Fallback)
			}
			opa, err := Load(fsys, Options{DisableNative: true, EvalTimeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			differential(t, native, opa, 1500, 2)
		})
	}
}

func TestEvalAllocs(t *testing.T) {
	s, err := Builtin(Options{})
	if err != nil {
		t.Fatal(err)
	}
	events := realisticMix(256)
	var m Matches
	s.Eval(&events[0], &m)
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		s.Eval(&events[i%len(events)], &m)
		i++
	})
	if allocs != 0 {
		t.Errorf("Set.Eval of the built-in library: %v allocs per event, want 0", allocs)
	}
}

func BenchmarkEvalBuiltin(b *testing.B) {
	s, err := Builtin(Options{})
	if err != nil {
		b.Fatal(err)
	}
	benchEval(b, s)
}

// BenchmarkEvalOPA is the peer: full OPA evaluation of the same rules.
func BenchmarkEvalOPA(b *testing.B) {
	s, err := Builtin(Options{DisableNative: true})
	if err != nil {
		b.Fatal(err)
	}
	benchEval(b, s)
}

func benchEval(b *testing.B, s *Set) {
	events := realisticMix(1024)
	var m Matches
	matched := 0
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		s.Eval(&events[i&1023], &m)
		if m.Count(0) {
			matched++
		}
		i++
	}
	_ = matched
}

func TestMatchesBits(t *testing.T) {
	var b strings.Builder
	for i := range 70 {
		fmt.Fprintf(&b, "# METADATA\n# custom:\n#   characteristics: [ip.src]\n#   period: 1m\n#   requests_per_period: 1\n#   action: log\npackage guardd.rules.r%02d\n\ncount if input.http.status == %d\n", i, 200+i)
	}
	fsys := fstest.MapFS{}
	for i, mod := range strings.SplitAfter(b.String(), "\n\ncount") {
		_ = i
		_ = mod
	}
	for i := range 70 {
		fsys[fmt.Sprintf("r%02d.rego", i)] = &fstest.MapFile{Data: []byte(fmt.Sprintf("# METADATA\n# custom:\n#   characteristics: [ip.src]\n#   period: 1m\n#   requests_per_period: 1\n#   action: log\npackage guardd.rules.r%02d\n\ncount if input.http.status == %d\n", i, 200+i))}
	}
	s, err := Load(fsys, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var m Matches
	for i := range 70 {
		s.Eval(&characteristics.Event{Status: 200 + i}, &m)
		for j := range 70 {
			if m.Count(j) != (i == j) || m.Mitigate(j) != (i == j) {
				t.Fatalf("status %d: rule %d count=%v mitigate=%v", 200+i, j, m.Count(j), m.Mitigate(j))
			}
			c, mit := m.Words(j >> 6)
			if c>>(j&63)&1 == 1 != m.Count(j) || mit>>(j&63)&1 == 1 != m.Mitigate(j) {
				t.Fatalf("status %d: rule %d: Words disagrees with Count and Mitigate", 200+i, j)
			}
		}
		if c, mit := m.Words(1); c>>6 != 0 || mit>>6 != 0 {
			t.Fatalf("status %d: bits beyond the 70 rules: %x, %x", 200+i, c, mit)
		}
		if c, mit := m.Words(2); c != 0 || mit != 0 {
			t.Fatalf("status %d: a word beyond the rules is %x, %x", 200+i, c, mit)
		}
	}
}

// BenchmarkEvalRule measures each built-in rule alone.
func BenchmarkEvalRule(b *testing.B) {
	entries, err := fs.Glob(builtin.FS, "*.rego")
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range entries {
		if strings.HasSuffix(name, "_test.rego") {
			continue
		}
		data, _ := fs.ReadFile(builtin.FS, name)
		s, err := Load(fstest.MapFS{name: {Data: data}}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(strings.TrimSuffix(name, ".rego"), func(b *testing.B) { benchEval(b, s) })
	}
}

func TestDefaultCountIsNative(t *testing.T) {
	mod := "# METADATA\n# custom:\n#   characteristics: [ip.src]\n#   period: 1m\n#   requests_per_period: 10\n#   action: log\npackage guardd.rules.d\n\ndefault count := false\n\ncount if input.http.status == 404\n\ndefault mitigate := true\n\nmitigate if input.http.status == 200\n"
	fsys := fstest.MapFS{"d.rego": {Data: []byte(mod)}}
	native, err := Load(fsys, Options{EvalTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	r := native.Rules()[0]
	// count is native; mitigate has a true default, which is not.
	if r.Native || len(r.Fallback) != 1 || !strings.HasPrefix(r.Fallback[0], "mitigate:") {
		t.Errorf("rule = %+v, want only mitigate to fall back", r)
	}
	if native.evals[0].count == nil {
		t.Error("count with `default count := false` did not compile natively")
	}
	opa, err := Load(fsys, Options{DisableNative: true, EvalTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	differential(t, native, opa, 500, 4)
}

package rules

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/characteristics/signature"
)

// TestShapeKey: which paths of the built-in library's plan are remembered
// by their shape, and what the shape is.
func TestShapeKey(t *testing.T) {
	set, err := Builtin(Options{})
	if err != nil {
		t.Fatal(err)
	}
	ps := set.plan.shape
	if ps == nil {
		t.Fatal("the built-in library's path group has no shape")
	}
	for _, tc := range []struct{ path, shape string }{
		{"/product/12345", "/product/\xff"},
		{"/product/7", "/product/\xff"},
		{"/Old-Page-42", "/Old-Page-\xff"},
		{"/blog/post-12", "/blog/post-\xff"},
		{"/discontinued/item-99", "/discontinued/item-\xff"},
		{"/product/12/reviews", ""},       // between two slashes, as /level/15/exec: unshaped
		{"/static/fonts/inter.woff2", ""}, // .woff2 is a static suffix
		{"/static/a.mp4", ""},
		{"/hnap1", ""},          // a CVE probe
		{"/HNAP1", ""},          // in any case
		{"/1337.php", ""},       // a web shell
		{"/c99.php", ""},        // a web shell
		{"/wso2.php", ""},       // a web shell
		{"/api/v1/login", ""},   // a login path
		{"/etc/f5-release", ""}, // a file a traversal reads
		{"HTTP/2", ""},          // a protocol version as a path: compared whole
		{"HTTP/9", ""},          // the same shape
		{"/a//1", ""},           // not plain
		{"/a/./1", ""},          // not plain
		{"/a/%31", ""},          // escaped
		{"/a/1;x", ""},          // a path parameter
		{"/caf\u00e9/1", ""},    // not ASCII
		{"/a?b/1", ""},          // outside the alphabet
		{"/no-digits", ""},
		{"", ""},
	} {
		k, ok := ps.key(tc.path, nil)
		if got := string(k); ok != (tc.shape != "") || ok && got != tc.shape {
			t.Errorf("key(%q) = %q, %v; want %q", tc.path, got, ok, tc.shape)
		}
	}
}

// TestShapeProof checks, condition by condition, what newPathShape proves:
// every condition of the built-in library's path group gives the same
// result on two paths of one shape. The paths are the library's own
// constants and the signature fragments that hold digits, alone and inside
// a path, and real paths with ids, each with its isolated digit runs
// replaced by random digits.
func TestShapeProof(t *testing.T) {
	set, err := Builtin(Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := set.plan
	ps := p.shape
	var g planGroup
	for _, x := range p.groups {
		if x.src == srcPath {
			g = x
		}
	}
	var consts []string
	for _, in := range pathShapeInfos(set) {
		consts = append(consts, in.consts...)
	}
	consts = append(consts, signature.Fragments()...)
	var paths []string
	for _, c := range consts {
		if !strings.ContainsAny(c, "0123456789") {
			continue
		}
		for _, f := range []string{"%s", "/%s", "/x/%s", "%s/", "/%s/1", "/a1/%s", "/a-%s-1", "/1%s", "%s9", "/x.%s", "/%s.php"} {
			paths = append(paths, fmt.Sprintf(f, c))
		}
	}
	paths = append(paths, "/product/12345", "/blog/post-7", "/a/1/b/2", "/v1", "/1", "/12.34", "/x-1-y-2", "/page1", "/p2p")
	rng := rand.New(rand.NewPCG(14, 14))
	var st state
	eval := func(path string) uint64 {
		e := characteristics.Event{Path: path, Method: "GET", Protocol: "HTTP/1.1", Status: 200}
		st.next()
		var v uint64
		for j := range uint(64) {
			if g.mask&(1<<j) != 0 && p.conds[g.word*64+int(g.shift+j)](&e, &st) {
				v |= 1 << j
			}
		}
		return v
	}
	shaped := 0
	for _, s := range paths {
		k, ok := ps.key(s, nil)
		if !ok {
			continue
		}
		shaped++
		want := eval(s)
		for range 20 {
			v := redigit(s, ps, rng)
			k2, ok2 := ps.key(v, nil)
			if !ok2 || string(k2) != string(k) {
				t.Fatalf("%q and %q: shapes %q and %q", s, v, k, k2)
			}
			if got := eval(v); got != want {
				for j := range uint(64) {
					if (got^want)&(1<<j) != 0 {
						t.Errorf("%q and %q, one shape %q: %s differs", s, v, k, p.names[g.word*64+int(g.shift+j)])
					}
				}
			}
		}
	}
	if shaped < 50 {
		t.Errorf("only %d of %d paths shaped", shaped, len(paths))
	}
}

// redigit returns s with each of its isolated digit runs replaced by 1 to 8
// random digits.
func redigit(s string, ps *pathShape, rng *rand.Rand) string {
	var b strings.Builder
	prev := byte(0)
	for i := 0; i < len(s); {
		if s[i] < '0' || s[i] > '9' {
			prev = foldByte(s[i])
			b.WriteByte(s[i])
			i++
			continue
		}
		j := i
		for j < len(s) && '0' <= s[j] && s[j] <= '9' {
			j++
		}
		next := byte(0)
		if j < len(s) {
			next = foldByte(s[j])
		}
		if ps.isolated(prev, next) {
			for range 1 + rng.IntN(8) {
				b.WriteByte(byte('0' + rng.IntN(10)))
			}
		} else {
			b.WriteString(s[i:j])
		}
		i = j
	}
	return b.String()
}

// pathShapeInfos returns what the conditions of set's path group read.
func pathShapeInfos(set *Set) []*shapeInfo {
	var out []*shapeInfo
	for _, re := range set.evals {
		for _, pr := range []*predicate{re.count, re.mitigate} {
			if pr == nil {
				continue
			}
			for _, alt := range pr.alts {
				for _, st := range alt {
					if st.src == srcPath {
						out = append(out, st.shape)
					}
				}
			}
		}
	}
	return out
}

// TestShapeRefused: a path group with a condition that may tell digits
// apart (a regex, an ordering, a constant of digits alone looked for
// anywhere) remembers paths as they are; one whose digit constants are
// anchored shapes the others.
func TestShapeRefused(t *testing.T) {
	for _, tc := range []struct {
		body   string
		shaped bool
	}{
		{`regex.match("[0-9]+$", input.http.path)`, false},
		{`input.http.path > "/a5"`, false},
		{`contains(input.http.path, "42")`, false},
		{`glob.match("/a/*", ["/"], input.http.path)`, false},
		{`startswith(input.http.path, "42")`, true},
		{`contains(input.http.path, "v2/")`, true},
		{`input.http.path == "/42"`, true},
		{`not input.http.path in {"/1", "/2"}`, true},
		{`guardd.signature(input.http.norm.path, "webshell")`, true},
		{`input.http.anomalies.traversal`, true},
	} {
		set, err := Load(fstest.MapFS{"op.rego": &fstest.MapFile{Data: []byte(opModule(tc.body))}}, Options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		if got := set.plan.shape != nil; got != tc.shaped {
			t.Errorf("%s: shaped %v, want %v", tc.body, got, tc.shaped)
		}
	}
}

// TestShapeMemoSameAsNone: paths that share a shape, evaluated one after
// the other through one Matches (so each finds the previous one's memo
// entry), get the results of an evaluation that remembers nothing, for
// every rule of the library; and so do paths a digit apart that must not
// share one (web shells, CVE probes, static suffixes, protocol versions).
func TestShapeMemoSameAsNone(t *testing.T) {
	set, err := Builtin(Options{})
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{
		"/product/1", "/product/22", "/product/333", "/hnap1", "/hnap2", "/HNAP1",
		"/1337.php", "/1338.php", "/c99.php", "/c98.php", "/wso2.php", "/wso3.php",
		"/static/a.woff2", "/static/a.woff3", "/a.mp4", "/a.mp5", "/a.mp3", "HTTP/2", "HTTP/9", "HTTP/1.1", "HTTP/1.2",
		"/api/v1/login", "/api/v2/login", "/level/15/exec", "/level/16/exec", "/old-page-1", "/old-page-2",
		"/x/169.254.169.254", "/x/169.254.169.253", "/etc/f5-release", "/etc/f6-release", "/blog/post-3", "/blog/post-44",
	}
	var memo, none Matches
	none.st.bits.noMemo = true
	for pass := range 3 {
		for _, path := range paths {
			for _, status := range []int{200, 404} {
				for _, method := range []string{"GET", "POST"} {
					e := characteristics.Event{Method: method, Path: path, Protocol: "HTTP/1.1", Status: status, UserAgent: "Mozilla/5.0"}
					set.Eval(&e, &memo)
					set.Eval(&e, &none)
					for r, rule := range set.Rules() {
						if memo.Count(r) != none.Count(r) || memo.Mitigate(r) != none.Mitigate(r) {
							t.Errorf("pass %d, %s %s %d, %s: memo %v/%v, none %v/%v", pass, method, path, status, rule.Name,
								memo.Count(r), memo.Mitigate(r), none.Count(r), none.Mitigate(r))
						}
					}
				}
			}
		}
		slices.Reverse(paths)
	}
}

// TestHasDigit: the eight-bytes-at-a-time test agrees with a byte loop for
// every byte at every position of strings of 1 to 24 bytes.
func TestHasDigit(t *testing.T) {
	for n := 1; n <= 24; n++ {
		for pos := range n {
			for c := range 256 {
				b := []byte(strings.Repeat("a", n))
				b[pos] = byte(c)
				want := '0' <= c && c <= '9'
				if got := hasDigit(string(b)); got != want {
					t.Fatalf("hasDigit(%q) = %v", b, got)
				}
				b[(pos+1)%n] = 0xff // a high byte beside it
				if got := hasDigit(string(b)); got != want && n > 1 {
					t.Fatalf("hasDigit(%q) = %v", b, got)
				}
			}
		}
	}
}

// TestTLSClientNativeVsOPA: tls.client, read without a JA4 as undefined
// before anything else, agrees with OPA for every built-in rule on lines
// with a library's, a browser's, an unknown and no fingerprint.
func TestTLSClientNativeVsOPA(t *testing.T) {
	native, err := Builtin(Options{})
	if err != nil {
		t.Fatal(err)
	}
	opa, err := Builtin(Options{DisableNative: true, EvalTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	en, err := characteristics.NewEnricher(characteristics.EnrichConfig{})
	if err != nil {
		t.Fatal(err)
	}
	tm := -1
	for i, r := range native.Rules() {
		if r.Name == "tls_mismatch" {
			tm = i
		}
	}
	fired := 0
	var mn, mo Matches
	for _, ja4 := range []string{"", "t13d3112h2_e8f1e7e78f70_b26ce05bbdd6", "t13d1517h2_8daaf6152771_cb7bf5808d99", "t13d0000h2_000000000000_000000000000"} {
		for _, ua := range []string{
			"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36",
			"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
			"Mozilla/5.0 HeadlessChrome/131.0", "curl/8.5.0",
		} {
			e := characteristics.Event{IP: netip.MustParseAddr("203.0.113.9"), Method: "GET", Path: "/", Protocol: "HTTP/1.1", Status: 200, UserAgent: ua}
			e.TLS.JA4 = ja4
			en.Enrich(&e)
			native.Eval(&e, &mn)
			opa.Eval(&e, &mo)
			for i, r := range native.Rules() {
				if mn.Count(i) != mo.Count(i) || mn.Mitigate(i) != mo.Mitigate(i) {
					t.Errorf("JA4 %q, %q, %s: native %v/%v, OPA %v/%v", ja4, ua, r.Name, mn.Count(i), mn.Mitigate(i), mo.Count(i), mo.Mitigate(i))
				}
			}
			if mn.Count(tm) {
				fired++
			}
		}
	}
	if fired == 0 {
		t.Error("tls_mismatch never counted: the fingerprints were not looked up")
	}
}

// TestManyAlternatives: a set of more alternatives than a plan rules out
// by bit sets (maxAlts), each a path compared whole, evaluated through one
// Matches over and over: every rule counts on its own path alone, whether
// its alternative is one of the first maxAlts or tried on every event, and
// whether the path's conditions come from the memo or not.
func TestManyAlternatives(t *testing.T) {
	const n = maxAlts + 20
	fsys := fstest.MapFS{}
	for i := range n {
		mod := strings.Replace(opModule(fmt.Sprintf(`input.http.path == "/p%d"`, i)), "package guardd.rules.op", fmt.Sprintf("package guardd.rules.op%d", i), 1)
		fsys[fmt.Sprintf("op%d.rego", i)] = &fstest.MapFile{Data: []byte(mod)}
	}
	set, err := Load(fsys, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.plan.alts) <= maxAlts {
		t.Fatalf("%d alternatives", len(set.plan.alts))
	}
	index := map[string]int{}
	for i, r := range set.Rules() {
		index[r.Name] = i
	}
	var m Matches
	for pass := range 3 {
		for i := range n + 5 {
			e := characteristics.Event{Method: "GET", Path: fmt.Sprintf("/p%d", i), Status: 200}
			set.Eval(&e, &m)
			for j := range n {
				if got := m.Count(index[fmt.Sprintf("op%d", j)]); got != (i == j) {
					t.Fatalf("pass %d, path %s: rule op%d counted %v", pass, e.Path, j, got)
				}
			}
		}
	}
}

// TestShapeAlphabet: a shaped path has none of the bytes without which
// guardd.xss is false (signature.XSS's prefilter), nor those that make a
// path not plain ('%', '\\', ';', controls, non-ASCII).
func TestShapeAlphabet(t *testing.T) {
	for _, c := range []byte(xssBytes + "%\\;\x00\x1f\x7f\x80\xff ?#&=+,:@$!*[]{}|^") {
		if shapeClass[c] != shapeOut {
			t.Errorf("byte %q is in the shape alphabet", c)
		}
	}
}

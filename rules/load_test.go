package rules

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/counting"
	"github.com/guardd/guardd/mitigation"
)

// wantOf reads the expected error substring from a bad file's first line,
// `# want: ...`.
func wantOf(t *testing.T, data []byte) string {
	t.Helper()
	line, _, _ := bytes.Cut(data, []byte("\n"))
	want, ok := strings.CutPrefix(string(line), "# want: ")
	if !ok {
		t.Fatalf("first line %q: want `# want: <error substring>`", line)
	}
	return want
}

func TestLoadBad(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.bad.rego")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bad rules: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want := wantOf(t, data)
			s, err := Load(fstest.MapFS{filepath.Base(f): {Data: data}}, Options{})
			if err == nil {
				t.Fatalf("Load succeeded with %d rules; want error %q", len(s.Rules()), want)
			}
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error:\n%v\nwant substring:\n%s", err, want)
			}
			var le *Error
			if !errors.As(err, &le) || le.File != filepath.Base(f) {
				t.Errorf("error %v does not carry the file name", err)
			}
		})
	}
}

// TestLoadAllOrNothing loads good and bad files together: nothing loads,
// and every bad file is reported.
func TestLoadAllOrNothing(t *testing.T) {
	fsys := fstest.MapFS{}
	for _, pat := range []string{"testdata/good/*.rego", "testdata/bad/*.bad.rego"} {
		files, _ := filepath.Glob(pat)
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			fsys[filepath.Base(f)] = &fstest.MapFile{Data: data}
		}
	}
	s, err := Load(fsys, Options{})
	if err == nil {
		t.Fatalf("Load succeeded with %d rules", len(s.Rules()))
	}
	for name, f := range fsys {
		// Type errors are found after a successful compile, which another
		// file's compile error (unsafe_var) prevents.
		if !strings.HasSuffix(name, ".bad.rego") {
			continue
		}
		want := wantOf(t, f.Data)
		typeErr := strings.Contains(want, "has type") || strings.Contains(want, "no count rule")
		if !typeErr && !strings.Contains(err.Error(), want) {
			t.Errorf("error does not report %s:\n%v", name, err)
		}
	}
}

func TestLoadGood(t *testing.T) {
	s, err := LoadDir("testdata/good", Options{})
	if err != nil {
		t.Fatal(err)
	}
	rules := map[string]*Rule{}
	for _, r := range s.Rules() {
		rules[r.Name] = r
	}
	su := rules["slow_upstream"]
	if su == nil {
		t.Fatal("slow_upstream not loaded")
	}
	want := Rule{
		Name: "slow_upstream", Title: "Slow upstream per API key", File: "slow_upstream.good.rego",
		Period: time.Minute, MitigationTimeout: 5 * time.Minute, Requests: 30,
		Action: mitigation.ActionRateLimit, Algorithm: counting.TokenBucket,
	}
	if su.Name != want.Name || su.Title != want.Title || su.File != want.File || su.Period != want.Period ||
		su.MitigationTimeout != want.MitigationTimeout || su.Requests != want.Requests ||
		su.Action != want.Action || su.Algorithm != want.Algorithm {
		t.Errorf("slow_upstream = %+v, want %+v", su, want)
	}
	if len(su.Characteristics) != 1 || su.Characteristics[0].String() != `http.headers["x-api-key"]` {
		t.Errorf("characteristics = %v", su.Characteristics)
	}
	if su.Score == nil || *su.Score != characteristics.MustParse("http.request_time") {
		t.Errorf("score = %v, want http.request_time", su.Score)
	}
	if !su.Native {
		t.Errorf("slow_upstream not native: %v", su.Fallback)
	}
	hc := rules["header_count"]
	if hc == nil || hc.Native || len(hc.Fallback) == 0 || !strings.Contains(hc.Fallback[0], "object.get") {
		t.Errorf("header_count = %+v, want a fallback naming object.get", hc)
	}
	if hc != nil && (hc.Algorithm != counting.SlidingWindow || hc.MitigationTimeout != DefaultMitigationTimeout || hc.Title != "Requests with few headers") {
		t.Errorf("header_count defaults = %+v", hc)
	}
}

func TestLoadDirErrors(t *testing.T) {
	if _, err := LoadDir("testdata/nonexistent", Options{}); err == nil {
		t.Error("LoadDir of a missing directory succeeded")
	}
	if _, err := LoadDir("testdata/good/slow_upstream.good.rego", Options{}); err == nil {
		t.Error("LoadDir of a file succeeded")
	}
}

func TestLoadDuplicatePackage(t *testing.T) {
	mod := opModule(`input.http.status == 404`)
	_, err := Load(fstest.MapFS{"a.rego": {Data: []byte(mod)}, "b.rego": {Data: []byte(mod)}}, Options{})
	if err == nil || !strings.Contains(err.Error(), "b.rego:7: package guardd.rules.op is already declared at a.rego:7") {
		t.Errorf("err = %v", err)
	}
}

func TestMerge(t *testing.T) {
	b, err := Builtin(Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := LoadDir("testdata/good", Options{EvalTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	m, err := Merge(b, g)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Rules()) != len(b.Rules())+len(g.Rules()) {
		t.Errorf("merged %d rules, want %d", len(m.Rules()), len(b.Rules())+len(g.Rules()))
	}
	if _, err := Merge(b, g, b); err == nil || !strings.Contains(err.Error(), "is also defined at") {
		t.Errorf("Merge with duplicates: err = %v", err)
	}
	// The merged set evaluates as its parts do.
	var e characteristics.Event
	var mm, mb, mg Matches
	gen := newEventGen(3)
	for range 500 {
		gen.next(&e)
		m.Eval(&e, &mm)
		b.Eval(&e, &mb)
		g.Eval(&e, &mg)
		for i := range b.Rules() {
			if mm.Count(i) != mb.Count(i) || mm.Mitigate(i) != mb.Mitigate(i) {
				t.Fatalf("rule %s differs in the merged set", b.Rules()[i].Name)
			}
		}
		for i := range g.Rules() {
			j := len(b.Rules()) + i
			if mm.Count(j) != mg.Count(i) || mm.Mitigate(j) != mg.Mitigate(i) {
				t.Fatalf("rule %s differs in the merged set", g.Rules()[i].Name)
			}
		}
	}
}

// FuzzLoad feeds arbitrary module text to Load: it must return an error or
// rules, never panic, and every error must name the file.
func FuzzLoad(f *testing.F) {
	for _, pat := range []string{"testdata/good/*.rego", "testdata/bad/*.bad.rego", "builtin/*.rego"} {
		files, _ := filepath.Glob(pat)
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(string(data))
		}
	}
	f.Add(opModule(`input.http.headers["x"] in {"a", 1, [2]}`))
	f.Add("# METADATA\n# custom: 5\npackage guardd.rules.x\ncount := true\n")
	f.Add("# METADATA\n# custom:\n#   characteristics: {a: b}\n#   period: [1]\n#   requests_per_period: NaN\n#   action: 7\npackage guardd.rules.x\ncount := true\n")
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 8<<10 {
			return
		}
		s, err := Load(fstest.MapFS{"f.rego": {Data: []byte(text)}}, Options{EvalTimeout: time.Minute})
		if err != nil {
			if !strings.Contains(err.Error(), "f.rego") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		var m Matches
		var e characteristics.Event
		g := newEventGen(uint64(len(text)))
		for range 3 {
			g.next(&e)
			s.Eval(&e, &m)
		}
		for _, r := range s.Rules() {
			if r.Period <= 0 || r.Requests <= 0 || r.MitigationTimeout <= 0 || len(r.Characteristics) == 0 {
				t.Fatalf("rule %s loaded with invalid parameters: %+v", r.Name, r)
			}
		}
	})
}

func TestLoadWindowsAndDistinct(t *testing.T) {
	s, err := Load(os.DirFS("testdata/windows"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*Rule{}
	for _, r := range s.Rules() {
		byName[r.Name] = r
	}
	ls := byName["low_and_slow"]
	if ls == nil || len(ls.Windows) != 2 || ls.Windows[1] != (Window{time.Hour, 10}) || ls.Period != 5*time.Minute || ls.Requests != 20 || ls.Distinct != nil {
		t.Errorf("low_and_slow: %+v", ls)
	}
	dp := byName["distinct_paths"]
	if dp == nil || dp.Distinct == nil || dp.Distinct.String() != "http.path" || len(dp.Windows) != 2 || dp.Windows[0] != (Window{time.Minute, 50}) {
		t.Errorf("distinct_paths: %+v", dp)
	}
	if dp.RequestTime {
		t.Errorf("distinct_paths counts on status, it is not request-time")
	}
}

func TestLoadChallenge(t *testing.T) {
	s, err := Load(os.DirFS("testdata/challenge"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Challenge{
		"challenge_default": {Tier: TierProofOfWork, Fallback: mitigation.ActionRateLimit},
		"challenge_cookie":  {Tier: TierCookie, Difficulty: 12, Fallback: mitigation.ActionBlock},
		"weak_signal":       {},
	}
	for _, r := range s.Rules() {
		if r.Name == "weak_signal" {
			if r.Action != mitigation.ActionLog || r.AnomalyScore != 2.5 || r.Challenge != (Challenge{}) {
				t.Errorf("weak_signal: action %v, anomaly_score %v, challenge %+v", r.Action, r.AnomalyScore, r.Challenge)
			}
			continue
		}
		if r.Action != mitigation.ActionChallenge || r.Challenge != want[r.Name] {
			t.Errorf("%s: action %v, challenge %+v; want challenge %+v", r.Name, r.Action, r.Challenge, want[r.Name])
		}
	}
	if len(s.Rules()) != len(want) {
		t.Errorf("%d rules, want %d", len(s.Rules()), len(want))
	}
}

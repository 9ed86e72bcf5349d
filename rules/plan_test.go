package rules

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/guardd/guardd/bench/loggen/loggentest"
	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/ingest/nginxlog"
)

// TestMemoSameAsNone: remembering conditions across events by their
// fields' values changes no result. Every line of two realistic logs (the
// labelled log of bench/loggen, every class, and testdata/access.log.gz) is
// evaluated through one Matches, twice over so that the second pass finds
// the values remembered, and compared with an evaluation that remembers
// nothing; then again with tables of 4 entries, so that entries are
// claimed, evicted and reclaimed all the time.
func TestMemoSameAsNone(t *testing.T) {
	if testing.Short() {
		t.Skip("evaluates two whole logs")
	}
	set, err := Builtin(Options{})
	if err != nil {
		t.Fatal(err)
	}
	events := loggentest.Events(t, 200)
	f := nginxlog.MustCompile(nginxlog.Combined)
	for _, l := range accessLogLines(t) {
		var ev characteristics.Event
		if f.Parse(l, &ev) == nil {
			events = append(events, ev)
		}
	}
	compare := func(t *testing.T) {
		var memo, none Matches
		none.st.bits.noMemo = true
		for pass := range 2 {
			for i := range events {
				e := &events[i]
				set.Eval(e, &memo)
				set.Eval(e, &none)
				for r, rule := range set.Rules() {
					if memo.Count(r) != none.Count(r) || memo.Mitigate(r) != none.Mitigate(r) {
						t.Fatalf("pass %d, event %d (%s %q ua %q status %d): %s count %v/%v mitigate %v/%v (memo/none)",
							pass, i, e.Method, e.Path, e.UserAgent, e.Status, rule.Name,
							memo.Count(r), none.Count(r), memo.Mitigate(r), none.Mitigate(r))
					}
				}
			}
		}
	}
	t.Run("default", compare)
	t.Run("tiny", func(t *testing.T) {
		saved := memoSize
		t.Cleanup(func() { memoSize = saved })
		for i := range memoSize {
			if memoSize[i] > 0 {
				memoSize[i] = 4
			}
		}
		compare(t)
	})
}

// TestMemoPerSet: what one Set remembers is never read by another, even
// when their conditions take the same bits: a reload (a new Set from the
// same files or changed ones), Merge and Select each get their own.
func TestMemoPerSet(t *testing.T) {
	load := func(prefix string) *Set {
		t.Helper()
		fsys := fstest.MapFS{"r.rego": {Data: []byte(strings.Replace(opModule(
			fmt.Sprintf(`startswith(input.http.path, %q)`, prefix)), "package guardd.rules.op", "package guardd.rules.r", 1))}}
		s, err := Load(fsys, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b, a2 := load("/a"), load("/b"), load("/a")
	merged, err := Merge(b)
	if err != nil {
		t.Fatal(err)
	}
	selected := a.Select(func(*Rule) bool { return true })
	if a.plan.groups[0] != b.plan.groups[0] {
		t.Fatalf("the sets' path groups differ (%v, %v): the test needs them alike", a.plan.groups, b.plan.groups)
	}
	var m Matches // shared by every set, in turn
	for round := range 3 {
		for _, path := range []string{"/a/x", "/b/x", "/a/x", "/c"} {
			e := characteristics.Event{Method: "GET", Path: path, Status: 200}
			for _, c := range []struct {
				name string
				set  *Set
				want bool
			}{
				{"a", a, strings.HasPrefix(path, "/a")},
				{"b", b, strings.HasPrefix(path, "/b")},
				{"a reloaded", a2, strings.HasPrefix(path, "/a")},
				{"merged b", merged, strings.HasPrefix(path, "/b")},
				{"selected a", selected, strings.HasPrefix(path, "/a")},
			} {
				c.set.Eval(&e, &m)
				if m.Count(0) != c.want {
					t.Errorf("round %d, %s on %s: count %v, want %v", round, c.name, path, m.Count(0), c.want)
				}
			}
		}
	}
}

// TestMemoShortKeys: values of up to 16 bytes are remembered whole; ones
// that differ in a single byte, or only in length, must not share an entry.
func TestMemoShortKeys(t *testing.T) {
	var vals []string
	for n := range 18 {
		v := strings.Repeat("a", n)
		vals = append(vals, v)
		for i := range n {
			b := []byte(v)
			b[i] = 'b'
			vals = append(vals, string(b))
		}
	}
	// Of 8 to 16 bytes, the two words overlap: these differ only in length.
	vals = append(vals, "aaaaaaaaaaaaaab", "aaaaaaaaaaaaaaab", "aaaaaaaaaaaaaab", "aaaaaaaaaaaaaaab")
	seen := map[[3]uint64]string{}
	for _, v := range vals {
		if len(v) > 16 {
			continue
		}
		k0, k1 := shortKey(v)
		k := [3]uint64{k0, k1, uint64(len(v))}
		if prev, dup := seen[k]; dup && prev != v {
			t.Fatalf("%q and %q have the same key", prev, v)
		}
		seen[k] = v
	}
	// Through a Set: a rule over the exact path, with tables of one entry
	// so that every value lands on the same one.
	saved := memoSize
	t.Cleanup(func() { memoSize = saved })
	for i := range memoSize {
		if memoSize[i] > 0 {
			memoSize[i] = 1
		}
	}
	fsys := fstest.MapFS{"r.rego": {Data: []byte(strings.Replace(opModule(
		`input.http.path == "aaaaaaaaaaaaaaab"`), "package guardd.rules.op", "package guardd.rules.r", 1))}}
	s, err := Load(fsys, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var m Matches
	for range 2 {
		for _, v := range vals {
			s.Eval(&characteristics.Event{Path: v}, &m)
			if want := v == "aaaaaaaaaaaaaaab"; m.Count(0) != want {
				t.Errorf("path %q: count %v, want %v", v, m.Count(0), want)
			}
		}
	}
}

// TestPlanOverflow: a library larger than the plan's bit sets (more than 64
// conditions on one field, more than maxBits conditions, more than maxAlts
// alternatives) evaluates the rest without bits, and agrees with OPA and
// with no memo, event after event.
func TestPlanOverflow(t *testing.T) {
	if testing.Short() {
		t.Skip("loads a large rule set twice")
	}
	fsys := fstest.MapFS{}
	for i := range 12 {
		var body strings.Builder
		for j := range 30 {
			n := i*30 + j
			fmt.Fprintf(&body, "count if startswith(input.http.path, \"/p%d/\")\n", n)
			fmt.Fprintf(&body, "count if {\n\tinput.http.method == \"M%d\"\n\tendswith(input.http.user_agent, \"u%d\")\n}\n", n, n)
		}
		mod := strings.Replace(opModule(`false`), "package guardd.rules.op", fmt.Sprintf("package guardd.rules.r%d", i), 1) + body.String()
		fsys[fmt.Sprintf("r%d.rego", i)] = &fstest.MapFile{Data: []byte(mod)}
	}
	native, err := Load(fsys, Options{})
	if err != nil {
		t.Fatal(err)
	}
	opa, err := Load(fsys, Options{DisableNative: true, EvalTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(native.plan.conds); n <= maxBits {
		t.Fatalf("%d conditions, want more than %d", n, maxBits)
	}
	if n := len(native.plan.alts); n <= maxAlts {
		t.Fatalf("%d alternatives, want more than %d", n, maxAlts)
	}
	var memo, none, mo Matches
	none.st.bits.noMemo = true
	for round := range 3 {
		for _, n := range []int{0, 5, 29, 64, 65, 130, 200, 255, 256, 300, 359} {
			for _, e := range []characteristics.Event{
				{Method: "GET", Path: fmt.Sprintf("/p%d/x", n), UserAgent: "a"},
				{Method: fmt.Sprintf("M%d", n), Path: "/", UserAgent: fmt.Sprintf("xu%d", n)},
				{Method: fmt.Sprintf("M%d", n), Path: "/", UserAgent: "xu"},
			} {
				native.Eval(&e, &memo)
				native.Eval(&e, &none)
				opa.Eval(&e, &mo)
				for i, r := range native.Rules() {
					if memo.Count(i) != mo.Count(i) || none.Count(i) != mo.Count(i) {
						t.Fatalf("round %d, %s %s %s: %s memo %v, no memo %v, OPA %v",
							round, e.Method, e.Path, e.UserAgent, r.Name, memo.Count(i), none.Count(i), mo.Count(i))
					}
				}
			}
		}
	}
}

package engine_test

import (
	"bytes"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/guardd/guardd/bench/loggen/loggentest"
	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/counting"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/rules"
	"github.com/guardd/guardd/rules/engine"
)

// reference is Prepare written plainly, rule by rule: every rule keyed on
// its own through Engine.Key.
func reference(e *engine.Engine, set *rules.Set, ev *characteristics.Event) (items []engine.Match, keys [][]byte) {
	var rm rules.Matches
	set.Eval(ev, &rm)
	for i, r := range e.Rules() {
		if r.Action == mitigation.ActionThrottle {
			continue
		}
		cnt, mit := rm.Count(i), rm.Mitigate(i)
		if !cnt && !mit {
			continue
		}
		key, vals, ok := e.Key(i, ev, nil)
		if !ok {
			continue
		}
		var value uint64
		if d := r.Distinct; d != nil && cnt {
			if d.Present(ev) {
				value = counting.Hash(d.AppendValue(nil, ev))
			} else if cnt = false; !mit {
				continue
			}
		}
		n := 1.0
		if r.Score != nil {
			if v, ok := r.Score.Num(ev); ok {
				n = v
			} else {
				n = 0
			}
		}
		items = append(items, engine.Match{Rule: int32(i), Count: cnt, Mitigate: mit, N: n, Value: value, Key: key})
		keys = append(keys, vals)
	}
	return items, keys
}

// TestPrepareMatchesReference: on every line of a labelled log of every
// class, and on events lacking each characteristic a built-in rule keys on,
// Prepare's shared keys give each rule the key, hash and distinct value it
// would have on its own.
// checkCounted fails t unless m's items are, in order, the matches of ref
// whose counting expression held, each with its key from refKeys; it
// returns how many there are. what names the event in messages.
func checkCounted(t *testing.T, what string, m *engine.Matches, ref []engine.Match, refKeys [][]byte) int {
	t.Helper()
	j := 0
	for k, w := range ref {
		if !w.Count {
			continue
		}
		if j >= len(m.Items) {
			t.Fatalf("%s: missing the counted match %+v", what, w)
		}
		it := m.Items[j]
		got := m.Keys[it.KeyOff : it.KeyOff+it.KeyLen]
		it.KeyOff, it.KeyLen = 0, 0
		if it != w || !bytes.Equal(got, refKeys[k]) {
			t.Fatalf("%s: match %+v key %q, want %+v key %q", what, it, got, w, refKeys[k])
		}
		j++
	}
	if j != len(m.Items) {
		t.Fatalf("%s: %d matches, want %d", what, len(m.Items), j)
	}
	return j
}

func TestPrepareMatchesReference(t *testing.T) {
	set, err := rules.Builtin(rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(engine.Config{Rules: set})
	if err != nil {
		t.Fatal(err)
	}
	all := loggentest.Events(t, 200)
	var events []characteristics.Event
	stride := 3 // a third is enough, and quicker
	if raceEnabled || testing.Short() {
		stride = 40 // the race detector makes each evaluation ~20x slower
	}
	for i := 0; i < len(all); i += stride {
		events = append(events, all[i])
	}
	// Variants without an address, a user agent, a session cookie, a JA4:
	// the keys holding them cannot be made, the others still can.
	n := len(events)
	for i := 0; i < n; i += 37 {
		for _, drop := range []func(*characteristics.Event){
			func(ev *characteristics.Event) { ev.IP, ev.Prefix = netip.Addr{}, netip.Prefix{} },
			func(ev *characteristics.Event) { ev.UserAgent = "" },
			func(ev *characteristics.Event) { ev.Cookies = nil },
			func(ev *characteristics.Event) { ev.TLS.JA4 = ""; ev.Query = "" },
		} {
			ev := events[i]
			drop(&ev)
			events = append(events, ev)
		}
	}
	// A second engine shares the Matches, as a pipeline's do across a
	// reload: what one made for an event is never taken for the other's.
	set2, err := rules.Load(fstest.MapFS{"a.rego": {Data: []byte(distinctRule)}, "b.rego": {Data: []byte(loginRule)}}, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e2, err := engine.New(engine.Config{Rules: set2})
	if err != nil {
		t.Fatal(err)
	}
	// An engine that leaves out what Apply skips.
	counted, err := engine.New(engine.Config{Rules: set, CountOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var m engine.Matches
	total, countedTotal, mitTotal := 0, 0, 0
	for i := range events {
		ev := &events[i]
		e, set := e, set
		if i%5 == 4 {
			e, set = e2, set2
		}
		m.Reset()
		if i%3 == 1 { // an earlier event in m: the Mitigable is the second
			e.Prepare(&events[(i+7)%len(events)], &m)
			m.Items = m.Items[:0]
		}
		mi := m.Mitigables()
		e.Prepare(ev, &m)
		all, allKeys := reference(e, set, ev)
		// The matches are those of the counting expressions, in rule
		// order; what the mitigation expressions matched is in the
		// event's Mitigable, with the same keys.
		var want []engine.Match
		var keys [][]byte
		var wantMit []engine.Match
		for j, w := range all {
			if w.Count {
				want, keys = append(want, w), append(keys, allKeys[j])
			}
			if w.Mitigate {
				wantMit = append(wantMit, w)
			}
		}
		if len(m.Items) != len(want) {
			t.Fatalf("event %d: %d matches, want %d:\n%+v\n%+v", i, len(m.Items), len(want), m.Items, want)
		}
		for j, it := range m.Items {
			got := m.Keys[it.KeyOff : it.KeyOff+it.KeyLen]
			it.KeyOff, it.KeyLen = 0, 0
			if it != want[j] || !bytes.Equal(got, keys[j]) {
				t.Fatalf("event %d, rule %s: match %+v key %q, want %+v key %q", i, e.Rules()[it.Rule].Name, it, got, want[j], keys[j])
			}
		}
		if m.Mitigables() != mi+1 {
			t.Fatalf("event %d: %d Mitigables after Prepare, want %d", i, m.Mitigables(), mi+1)
		}
		mk := e.Mitigable(&m, mi)
		j := 0
		for r, key, ok := mk.Next(0); ok; r, key, ok = mk.Next(r + 1) {
			if j >= len(wantMit) || int32(r) != wantMit[j].Rule || key != wantMit[j].Key {
				t.Fatalf("event %d: mitigable rule %d key %x, want %+v", i, r, key, wantMit)
			}
			if !slices.Contains(mk.Keys(), key) {
				t.Fatalf("event %d: key %x of rule %d not among the event's keys %x", i, key, r, mk.Keys())
			}
			j++
		}
		if j != len(wantMit) {
			t.Fatalf("event %d: %d mitigable rules, want %+v", i, j, wantMit)
		}
		mitTotal += j
		total += len(all)
		if e != counted && i%5 != 4 {
			m.Reset()
			if i%2 == 0 {
				counted.Prepare(ev, &m)
			} else { // the same, asked of the Matches
				m.CountOnly = true
				e.Prepare(ev, &m)
				m.CountOnly = false
			}
			if m.Mitigables() != 0 {
				t.Fatalf("event %d: CountOnly made a Mitigable", i)
			}
			countedTotal += checkCounted(t, fmt.Sprintf("event %d, CountOnly", i), &m, all, allKeys)
		}
	}
	if mitTotal == 0 {
		t.Fatal("no mitigation expression matched: the test proves little")
	}
	if countedTotal == 0 {
		t.Fatal("CountOnly was tested on no counted match")
	}
	if total < len(events) {
		t.Fatalf("only %d matches over %d events: the test proves little", total, len(events))
	}
}

// TestPrepareManyRules: with more than 64 rules, the rules' bits span
// several words, throttle rules (never keyed) among them; Prepare still
// gives each rule what it would have on its own, in rule order.
func TestPrepareManyRules(t *testing.T) {
	builtin, err := rules.Builtin(rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{}
	keys := []string{"[ip.src]", "[ip.src, http.user_agent]", "[http.user_agent]", "[tls.ja4]"}
	for i := range 50 {
		action, extra := "rate_limit", ""
		switch {
		case i%7 == 3:
			action = "throttle"
		case i%5 == 1:
			extra = "#   distinct: http.path\n"
		}
		key, cond := keys[i%len(keys)], fmt.Sprintf("input.http.status == %d", []int{200, 404, 301, 403}[i%4])
		if action == "throttle" { // read only what a request has when it arrives
			key, cond = "[ip.src]", fmt.Sprintf("startswith(input.http.path, %q)", []string{"/", "/wp-", "/api/"}[i%3])
		}
		mitigate := "mitigate := true\n"
		if action == "throttle" {
			mitigate = ""
		} else if i%3 == 0 {
			mitigate = fmt.Sprintf("mitigate if input.http.status != %d\n", 200+i%3*100)
		}
		fsys[fmt.Sprintf("r%d.rego", i)] = &fstest.MapFile{Data: []byte(fmt.Sprintf(`# METADATA
# title: r%[1]d
# custom:
#   characteristics: %[2]s
%[4]s#   period: 1m
#   requests_per_period: 5
#   action: %[3]s
package guardd.rules.many%[1]d

count if %[5]s

%[6]s`, i, key, action, extra, cond, mitigate))}
	}
	extra, err := rules.Load(fsys, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	set, err := rules.Merge(builtin, extra)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(set.Rules()); n <= 64 {
		t.Fatalf("%d rules: the test needs more than one word", n)
	}
	e, err := engine.New(engine.Config{Rules: set})
	if err != nil {
		t.Fatal(err)
	}
	all := loggentest.Events(t, 100)
	var m engine.Matches
	counted, mitigated := 0, 0
	for i := 0; i < len(all); i += 7 {
		ev := &all[i]
		m.Reset()
		e.Prepare(ev, &m)
		ref, refKeys := reference(e, set, ev)
		counted += checkCounted(t, fmt.Sprintf("event %d", i), &m, ref, refKeys)
		mk := e.Mitigable(&m, 0)
		r, key, ok := mk.Next(0)
		for _, w := range ref {
			if !w.Mitigate {
				continue
			}
			if !ok || int32(r) != w.Rule || key != w.Key {
				t.Fatalf("event %d: mitigable rule %d key %x ok %v, want %+v", i, r, key, ok, w)
			}
			mitigated++
			r, key, ok = mk.Next(r + 1)
		}
		if ok {
			t.Fatalf("event %d: extra mitigable rule %d", i, r)
		}
	}
	if counted == 0 || mitigated == 0 {
		t.Fatalf("%d counted, %d mitigated matches: the test proves little", counted, mitigated)
	}
}

package rules

import (
	"strconv"
	"testing"

	"github.com/guardd/guardd/bench/loggen/loggentest"
	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/cputime"
)

// BenchmarkEvalHostile measures the whole built-in library per event on
// bench/loggen's labelled log with every path made unique: by a number (ids,
// which paths remembered by shape share), or by letters and with a unique
// user agent too (what no memo helps with: the cost of a value never seen).
// Eight thousand events cycle through memo tables that hold two thousand
// paths, so a value is never found again.
func BenchmarkEvalHostile(b *testing.B) {
	base := loggentest.Events(b, 1000)
	set, err := Builtin(Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, v := range []struct {
		name string
		edit func(e *characteristics.Event, i int)
	}{
		{"unique-ids", func(e *characteristics.Event, i int) { e.Path += "/" + strconv.Itoa(i) }},
		{"unique-letters", func(e *characteristics.Event, i int) {
			e.Path += "/" + letters(i)
			e.UserAgent += " u" + letters(i)
		}},
	} {
		events := make([]characteristics.Event, 8192)
		for i := range events {
			events[i] = base[i%len(base)].Clone()
			v.edit(&events[i], i)
		}
		b.Run(v.name, func(b *testing.B) {
			var m Matches
			i := 0
			b.ReportAllocs()
			cpu0 := cputime.Process()
			for b.Loop() {
				set.Eval(&events[i&8191], &m)
				i++
			}
			cputime.Report(b, cpu0, int64(b.N), "cpu-ns/op")
		})
	}
}

// letters writes i in base 26 with the letters a to z.
func letters(i int) string {
	var b []byte
	for {
		b = append(b, byte('a'+i%26))
		i /= 26
		if i == 0 {
			return string(b)
		}
	}
}

package engine_test

import (
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/guardd/guardd/rules/engine"
)

// FuzzKeyValues: the values AppendKeyValue writes, NextKeyValue reads back
// in order, whatever UTF-8 they hold.
func FuzzKeyValues(f *testing.F) {
	f.Add("203.0.113.7", "", "curl/8.0")
	f.Add("", "", "")
	f.Add("a\x00b", "ünï", "/login?x=1")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) || !utf8.ValidString(c) {
			t.Skip("values are UTF-8 (0xff never occurs in them)")
		}
		in := []string{a, b, c}
		var key []byte
		for _, v := range in {
			key = engine.AppendKeyValue(key, v)
		}
		var out []string
		for range in {
			var v []byte
			v, key = engine.NextKeyValue(key)
			out = append(out, string(v))
		}
		if !slices.Equal(in, out) || len(key) != 0 {
			t.Errorf("wrote %q, read %q, left %q", in, out, key)
		}
	})
}

func TestNextKeyValueUnended(t *testing.T) {
	for _, tc := range []struct{ key, value, rest string }{
		{"", "", ""},
		{"abc", "abc", ""},
		{"a\xffb\xff", "a", "b\xff"},
		{"\xff", "", ""},
	} {
		v, rest := engine.NextKeyValue([]byte(tc.key))
		if string(v) != tc.value || string(rest) != tc.rest {
			t.Errorf("NextKeyValue(%q) = %q, %q; want %q, %q", tc.key, v, rest, tc.value, tc.rest)
		}
	}
}

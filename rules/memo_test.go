package rules

import (
	"net/netip"
	"testing"
	"unsafe"

	"github.com/guardd/guardd/characteristics"
)

// TestMemoFollowsContent: the multi-needle memo must answer by the value's
// content, not where it lives; an event buffer reused for another line with
// another user agent must not get the previous answer.
func TestMemoFollowsContent(t *testing.T) {
	set, err := Builtin(Options{})
	if err != nil {
		t.Fatal(err)
	}
	idx := -1
	for i, r := range set.Rules() {
		if r.Name == "scanner_ua" {
			idx = i
		}
	}
	if idx < 0 {
		t.Fatal("no scanner_ua rule")
	}
	buf := []byte("sqlmap/1.8.4#stable (https://sqlmap.org)")
	browser := "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox"
	var m Matches
	ev := characteristics.Event{IP: netip.MustParseAddr("203.0.113.1"), Method: "GET", Path: "/", Status: 200}
	for round := range 3 {
		// A scanner's user agent, through an aliased buffer.
		copy(buf, "sqlmap/1.8.4#stable (https://sqlmap.org)")
		ev.UserAgent = unsafeString(buf[:40])
		set.Eval(&ev, &m)
		if !m.Count(idx) {
			t.Fatalf("round %d: sqlmap not counted", round)
		}
		// The same bytes now hold a browser's.
		n := copy(buf, browser)
		ev.UserAgent = unsafeString(buf[:n])
		set.Eval(&ev, &m)
		if m.Count(idx) {
			t.Fatalf("round %d: a browser counted as a scanner (stale memo)", round)
		}
	}
	// More distinct values than the memo holds.
	for i := range 100 {
		ev.UserAgent = string(rune('a'+i%26)) + "-agent/" + string(rune('0'+i%10)) + " sqlmap"
		set.Eval(&ev, &m)
		if !m.Count(idx) {
			t.Fatalf("%q not counted", ev.UserAgent)
		}
	}
}

func unsafeString(b []byte) string { return unsafe.String(&b[0], len(b)) }

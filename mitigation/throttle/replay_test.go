package throttle

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestAdmitAsDecide: a replay's Counts and Admit decide every request as
// Decide does on the same sequence (same keys, algorithms, bursts, most
// restrictive rule), shadow rules included.
func TestAdmitAsDecide(t *testing.T) {
	set := load(t, rule("a", "sliding_window", 5, ""), rule("b", "fixed_window", 7, ""), rule("c", "sliding_log", 6, ""),
		rule("d", "token_bucket", 8, "#   burst: 3\n"), rule("e", "gcra", 4, "#   shadow: true\n"))
	live, _ := New(Config{})
	replay, _ := New(Config{})
	lrs, err := live.Build(set)
	if err != nil {
		t.Fatal(err)
	}
	rrs, err := replay.Build(set)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var d, r req
	var cs []Count
	at := t0
	refused := 0
	for i := range 5000 {
		at = at.Add(time.Duration(rng.IntN(2000)) * time.Millisecond)
		ip := fmt.Sprintf("192.0.2.%d", rng.IntN(4))
		path := []string{"/api/x", "/api/y", "/"}[rng.IntN(3)]
		want := d.decide(lrs, ip, path, at)
		r.ev.Reset()
		r.ev.IP, r.ev.Method, r.ev.Path, r.ev.Time = d.ev.IP, "GET", path, at
		rrs.Set().Eval(&r.ev, &r.m)
		cs, r.buf = rrs.Counts(&r.ev, &r.m, r.buf, cs[:0])
		got := rrs.Admit(cs, at)
		if got.Refused != want.Refused || got.Matched != want.Matched || got.Rule != want.Rule || got.Remaining != want.Remaining {
			t.Fatalf("request %d (%s %s at %s): Admit %+v, Decide %+v", i, ip, path, at, got, want)
		}
		if got.Refused {
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("no request refused: the sequence tests nothing")
	}
}

//go:build !race

package throttle

import (
	"net/netip"
	"testing"
)

// TestDecideAllocs holds Decide at zero allocations once warm, over many
// keys and every algorithm.
func TestDecideAllocs(t *testing.T) {
	l, _ := New(Config{})
	rs, err := l.Build(load(t, rule("a", "sliding_window", 5, ""), rule("b", "fixed_window", 5, ""), rule("c", "sliding_log", 5, ""),
		rule("d", "token_bucket", 5, "#   burst: 2\n"), rule("e", "gcra", 5, "")))
	if err != nil {
		t.Fatal(err)
	}
	var r req
	out := make([]byte, 0, 128)
	addrs := make([]netip.Addr, 64)
	for i := range addrs {
		addrs[i] = netip.AddrFrom4([4]byte{192, 0, 2, byte(i)})
	}
	run := func() {
		for _, a := range addrs {
			r.ev.Reset()
			r.ev.IP, r.ev.Method, r.ev.Path, r.ev.Time = a, "GET", "/api/x", t0
			rs.Set().Eval(&r.ev, &r.m)
			v, buf := rs.Decide(&r.ev, &r.m, t0, r.buf)
			r.buf = buf
			out = v.AppendPolicy(v.AppendRateLimit(out[:0]))
		}
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Errorf("Decide allocates %v times per 64 requests", n)
	}
}

// TestReplayAllocs holds a replay's Counts and Admit at zero allocations
// once warm, over many keys and every algorithm.
func TestReplayAllocs(t *testing.T) {
	l, _ := New(Config{})
	rs, err := l.Build(load(t, rule("a", "sliding_window", 5, ""), rule("b", "fixed_window", 5, ""), rule("c", "sliding_log", 5, ""),
		rule("d", "token_bucket", 5, "#   burst: 2\n"), rule("e", "gcra", 5, "#   shadow: true\n")))
	if err != nil {
		t.Fatal(err)
	}
	var r req
	var cs []Count
	addrs := make([]netip.Addr, 64)
	for i := range addrs {
		addrs[i] = netip.AddrFrom4([4]byte{192, 0, 2, byte(i)})
	}
	run := func() {
		for _, a := range addrs {
			r.ev.Reset()
			r.ev.IP, r.ev.Method, r.ev.Path, r.ev.Time = a, "GET", "/api/x", t0
			rs.Set().Eval(&r.ev, &r.m)
			cs, r.buf = rs.Counts(&r.ev, &r.m, r.buf, cs[:0])
			rs.Admit(cs, t0)
		}
	}
	run()
	if len(cs) != 5 {
		t.Fatalf("%d counts per request, want one per rule", len(cs))
	}
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Errorf("Counts and Admit allocate %v times per 64 requests", n)
	}
}

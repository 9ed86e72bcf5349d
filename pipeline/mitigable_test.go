package pipeline

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/guardd/guardd/mitigation"
)

// TestReportJudgesMitigateOnlyRequests: once the login rule trips, the
// mitigation covers the client's requests that its mitigation expression
// matches and its counting expression does not (any path but /health), and
// not the others.
func TestReportJudgesMitigateOnlyRequests(t *testing.T) {
	var src lines
	at := func(i int) time.Time { return wall.Add(-time.Hour + time.Duration(i)*time.Second) }
	for i := range 5 { // over 3/min from the 4th
		src = append(src, logLine("203.0.113.7", "/login", 401, at(i)))
	}
	for i := 5; i < 15; i++ {
		src = append(src, logLine("203.0.113.7", "/", 200, at(i)))       // mitigate only
		src = append(src, logLine("203.0.113.7", "/health", 200, at(i))) // neither
		src = append(src, logLine("192.0.2.9", "/", 200, at(i)))         // another key
	}
	rep := NewReport(true)
	h := NewHolder(build(t, ""))
	defer h.Close()
	st, err := Run(context.Background(), Config{Pipelines: h, Store: newStore(t), Report: rep, Replay: true, Now: func() time.Time { return wall }}, src)
	if err != nil {
		t.Fatal(err)
	}
	rm := rep.Mitigations()
	if len(rm) != 1 || rm[0].Trips != 2 || rm[0].Count != 12 || !rm[0].LastSeen.Equal(at(14)) {
		t.Fatalf("report %+v, want 2 trips covering 12 requests, the last at %v", rm, at(14))
	}
	if st.Mitigated != 12 {
		t.Errorf("%d requests mitigated, want 12", st.Mitigated)
	}
	cs := rep.Clients()
	if len(cs) != 1 || cs[0].Addr.String() != "203.0.113.7" || cs[0].Requests != 25 || cs[0].Actioned != 12 ||
		cs[0].Actions[mitigation.ActionBlock] != 12 || strings.Join(cs[0].Rules, ",") != "login" {
		t.Fatalf("clients %+v", cs)
	}
}

// TestRunWithoutReportCountsOnly: without a report nothing reads what the
// mitigation expressions matched, and the workers leave it out; with one,
// every event has it.
func TestRunWithoutReportCountsOnly(t *testing.T) {
	p := build(t, "")
	h := NewHolder(p)
	defer h.Close()
	for _, rep := range []*Report{nil, NewReport(false)} {
		b := &batch{now: wall}
		for i := range 10 {
			line := logLine("203.0.113.7", "/", 200, wall.Add(-time.Minute+time.Duration(i)*time.Second))
			b.lines = append(b.lines, lineRef{off: uint32(len(b.arena)), n: uint32(len(line)), line: int64(i + 1)})
			b.arena = append(b.arena, line...)
		}
		cfg := Config{Pipelines: h, Store: newStore(t), Report: rep, FutureTolerance: time.Minute, MaxErrors: 10}
		new(worker).prepare(&cfg, b)
		want := 0
		if rep != nil {
			want = 10
		}
		if got := b.m.Mitigables(); got != want || b.bad != 0 {
			t.Errorf("report %v: %d events with what their mitigation expressions matched (%d malformed), want %d", rep != nil, got, b.bad, want)
		}
		b.p.Release()
	}
}

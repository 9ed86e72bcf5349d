package pipeline

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/guardd/guardd/mitigation"
)

// TestExplain: the count of an address's key per rule, read without
// counting; the mitigations on it or on a prefix holding it; and Forget
// starting a deleted rule mitigation's count afresh.
func TestExplain(t *testing.T) {
	addr := netip.MustParseAddr("203.0.113.7")
	p := build(t, "")
	h := NewHolder(p)
	defer h.Close()
	store := newStore(t)
	feed := func(n int) {
		t.Helper()
		var src lines
		for i := range n {
			src = append(src, logLine(addr.String(), "/login", 401, wall.Add(-30*time.Second+time.Duration(i)*time.Second)))
		}
		if _, err := Run(context.Background(), Config{Pipelines: h, Store: store, Metrics: NewMetrics(nil), Now: func() time.Time { return wall }}, src); err != nil {
			t.Fatal(err)
		}
	}
	feed(2)
	ex := p.Explain(addr, store.List(wall), mitigation.Allowlist{}, wall)
	if ex.Address != "203.0.113.7" || ex.Allowlisted || len(ex.Mitigations) != 0 || len(ex.Rules) != 1 {
		t.Fatalf("explanation %+v", ex)
	}
	r := ex.Rules[0]
	if r.Rule != "login" || r.Action != "block" || r.Count != 2 || r.Limit != 3 || r.PeriodSeconds != 60 || r.Exceeded ||
		r.Ratio != 2.0/3 || r.Scope.String() != "ip.src=203.0.113.7" || r.Note != "" {
		t.Errorf("rule state %+v", r)
	}
	feed(2) // four in the minute: over 3
	active := store.List(wall)
	if len(active) != 1 {
		t.Fatalf("mitigations %v, want one", active)
	}
	prefix := mitigation.Mitigation{Rule: "manual", Scope: mitigation.Scope{{Name: "ip.src.prefix", Value: "203.0.113.0/24"}}}
	other := mitigation.Mitigation{Rule: "manual", Scope: mitigation.Scope{{Name: "ip.src", Value: "203.0.113.8"}}}
	ex = p.Explain(addr, append(active, prefix, other), mitigation.Allowlist{Prefixes: []netip.Prefix{netip.MustParsePrefix("203.0.113.0/28")}}, wall)
	if !ex.Allowlisted || len(ex.Mitigations) != 2 || ex.Mitigations[1].Scope[0].Name != "ip.src.prefix" || !ex.Rules[0].Exceeded {
		t.Errorf("explanation of a mitigated client %+v", ex)
	}
	if found, reset := p.Forget(prefix); found || reset {
		t.Errorf("Forget of a manual mitigation: found %v reset %v", found, reset)
	}
	if found, reset := p.Forget(active[0]); !found || !reset {
		t.Errorf("Forget of the rule's mitigation: found %v reset %v", found, reset)
	}
	if c := p.Explain(addr, nil, mitigation.Allowlist{}, wall).Rules[0].Count; c != 0 {
		t.Errorf("count after Forget %v, want 0", c)
	}
}

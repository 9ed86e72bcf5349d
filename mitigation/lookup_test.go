package mitigation

import (
	"testing"
	"time"
)

func TestLookupRule(t *testing.T) {
	s := newStore(t, Config{})
	sc := ipScope("203.0.113.7")
	mustAdd(t, s, mit("a", ActionBlock, sc, time.Hour), t0)
	mustAdd(t, s, mit("b", ActionRateLimit, sc, time.Minute), t0)
	if m, ok := s.LookupRule(sc.Key(), "b", t0); !ok || m.Rule != "b" || m.Action != ActionRateLimit {
		t.Errorf("LookupRule(b) = %+v, %v", m, ok)
	}
	if _, ok := s.LookupRule(sc.Key(), "b", t0.Add(2*time.Minute)); ok {
		t.Error("expired mitigation found")
	}
	if _, ok := s.LookupRule(sc.Key(), "c", t0); ok {
		t.Error("another rule's mitigation found")
	}
}

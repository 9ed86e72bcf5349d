package mitigation

import (
	"strings"
	"testing"
	"time"
)

// TestOrigin: the origins are a closed set; the store refuses any other.
func TestOrigin(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{{"rule", true}, {"manual", true}, {"api", true}, {"score", true}, {"", false}, {"Rule", false}, {"crowdsec", false}} {
		o, err := ParseOrigin(tc.in)
		if (err == nil) != tc.ok || (tc.ok && string(o) != tc.in) {
			t.Errorf("ParseOrigin(%q) = %q, %v", tc.in, o, err)
		}
		if err != nil && !strings.Contains(err.Error(), "'rule', 'manual', 'api' or 'score'") {
			t.Errorf("ParseOrigin(%q): %v does not list the accepted values", tc.in, err)
		}
	}
	s, err := New(Config{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	m := Mitigation{Rule: "r", Action: ActionBlock, Scope: Scope{{Name: "ip.src", Value: "192.0.2.1"}}, Expires: now.Add(time.Hour), Origin: "elsewhere"}
	if _, _, err := s.Add(m, now); err == nil || !strings.Contains(err.Error(), "unknown origin") {
		t.Errorf("Add with origin %q: %v, want an unknown origin error", m.Origin, err)
	}
	m.Origin = ""
	if got, ok, err := s.Add(m, now); err != nil || !ok || got.Origin != OriginRule {
		t.Errorf("Add without origin: %+v %v %v, want origin rule", got, ok, err)
	}
}

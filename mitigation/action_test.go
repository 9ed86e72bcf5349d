package mitigation

import (
	"strings"
	"testing"
)

func TestParseAction(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Action
		wantErr bool
	}{
		{"log", ActionLog, false},
		{"block", ActionBlock, false},
		{"rate_limit", ActionRateLimit, false},
		{"shadowban", ActionShadowBan, false},
		{"firewall", ActionFirewall, false},
		{"throttle", ActionThrottle, false},
		{"challenge", ActionChallenge, false},
		{"Block", 0, true},
		{"ratelimit", 0, true},
		{"", 0, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseAction(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseAction(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
			}
			if err != nil {
				for _, n := range actionNames {
					if !strings.Contains(err.Error(), "'"+n+"'") {
						t.Errorf("error %q does not list %q", err, n)
					}
				}
				return
			}
			if got != tc.want || got.String() != tc.in {
				t.Errorf("ParseAction(%q) = %v (%q), want %v", tc.in, got, got.String(), tc.want)
			}
		})
	}
	if s := Action(200).String(); s != "other" {
		t.Errorf("Action(200).String() = %q, want other", s)
	}
}

func TestActionRank(t *testing.T) {
	order := []Action{ActionLog, ActionThrottle, ActionChallenge, ActionShadowBan, ActionBlock, ActionFirewall}
	for i := 1; i < len(order); i++ {
		if !order[i].Stronger(order[i-1]) || order[i-1].Stronger(order[i]) {
			t.Errorf("%s should outrank %s", order[i], order[i-1])
		}
	}
	if !ActionChallenge.Stronger(ActionRateLimit) {
		t.Error("a challenge should outrank a rate limit: a browser that passes it meets the limit next")
	}
	if ActionThrottle.Mitigates() || !ActionRateLimit.Mitigates() || !ActionChallenge.Mitigates() {
		t.Error("throttle is decided per request; rate_limit is a mitigation")
	}
	if len(Names()) != int(numActions) {
		t.Errorf("Names: %v", Names())
	}
}

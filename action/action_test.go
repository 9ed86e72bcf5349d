package action

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Action
		wantErr bool
	}{
		{"log", Log, false},
		{"block", Block, false},
		{"rate_limit", RateLimit, false},
		{"shadowban", ShadowBan, false},
		{"firewall", Firewall, false},
		{"throttle", Throttle, false},
		{"challenge", Challenge, false},
		{"Block", 0, true},
		{"ratelimit", 0, true},
		{"", 0, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := Parse(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Parse(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
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
				t.Errorf("Parse(%q) = %v (%q), want %v", tc.in, got, got.String(), tc.want)
			}
		})
	}
	if s := Action(200).String(); s != "other" {
		t.Errorf("Action(200).String() = %q, want other", s)
	}
}

func TestActionRank(t *testing.T) {
	order := []Action{Log, Throttle, Challenge, ShadowBan, Block, Firewall}
	for i := 1; i < len(order); i++ {
		if !order[i].Stronger(order[i-1]) || order[i-1].Stronger(order[i]) {
			t.Errorf("%s should outrank %s", order[i], order[i-1])
		}
	}
	if !Challenge.Stronger(RateLimit) {
		t.Error("a challenge should outrank a rate limit: a browser that passes it meets the limit next")
	}
	if Throttle.Mitigates() || !RateLimit.Mitigates() || !Challenge.Mitigates() {
		t.Error("throttle is decided per request; rate_limit is a mitigation")
	}
	if len(Names()) != int(numActions) {
		t.Errorf("Names: %v", Names())
	}
}

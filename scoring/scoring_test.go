package scoring

import (
	"math"
	"net/netip"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)

func TestTableDecays(t *testing.T) {
	tb, err := NewTable(Config{HalfLife: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	k := netip.MustParsePrefix("192.0.2.7/32")
	for _, tc := range []struct {
		name   string
		at     time.Duration
		add    float64
		rule   string
		want   float64
		reason []Contribution
	}{
		{"first signal", 0, 3, "referer_sqli", 3, []Contribution{{"referer_sqli", 3}}},
		{"another rule adds up", 0, 2, "odd_header", 5, []Contribution{{"referer_sqli", 3}, {"odd_header", 2}}},
		{"the same rule again does not", 0, 3, "referer_sqli", 5, []Contribution{{"referer_sqli", 3}, {"odd_header", 2}}},
		{"one half-life later", time.Minute, 0, "", 2.5, []Contribution{{"referer_sqli", 1.5}, {"odd_header", 1}}},
		{"a late line refreshes at the newest time", 30 * time.Second, 2, "odd_header", 3.5, []Contribution{{"odd_header", 2}, {"referer_sqli", 1.5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := t0.Add(tc.at)
			if tc.add > 0 {
				tb.Add(k, tc.rule, tc.add, now)
			}
			got, why := tb.Explain(k, now)
			if math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("score %v, want %v", got, tc.want)
			}
			if len(why) != len(tc.reason) {
				t.Fatalf("reasons %v, want %v", why, tc.reason)
			}
			for i := range why {
				if why[i].Rule != tc.reason[i].Rule || math.Abs(why[i].Points-tc.reason[i].Points) > 1e-9 {
					t.Errorf("reason %d: %v, want %v", i, why[i], tc.reason[i])
				}
			}
		})
	}
}

func TestTableKeepsStrongestReasons(t *testing.T) {
	tb, _ := NewTable(Config{})
	k := netip.MustParsePrefix("2001:db8::1/128")
	for i, r := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"} {
		tb.Add(k, r, float64(i+1), t0) // i (9) replaces a (1)
	}
	tb.Add(k, "j", 0.5, t0) // weaker than every share: not kept
	score, why := tb.Explain(k, t0)
	if score != 44 {
		t.Errorf("score %v, want 44 (2+3+...+9)", score)
	}
	want := []string{"i", "h", "g", "f", "e", "d", "c", "b"}
	for i, c := range why {
		if c.Rule != want[i] {
			t.Errorf("reasons %v, want %v", why, want)
			break
		}
	}
}

func TestTableBounded(t *testing.T) {
	tb, _ := NewTable(Config{MaxKeys: 1000})
	heavy := netip.MustParsePrefix("198.51.100.1/32")
	tb.Add(heavy, "r", 50, t0)
	for i := range 100_000 {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		tb.Add(netip.PrefixFrom(a, 32), "r", 1, t0)
		if tb.Len() > 1000 {
			t.Fatalf("%d keys held after %d adds, cap 1000", tb.Len(), i+1)
		}
	}
	if got := tb.Score(heavy, t0); got != 50 {
		t.Errorf("heavy hitter's score %v, want 50 (kept)", got)
	}
}

func TestScorerLevels(t *testing.T) {
	s, err := NewScorer(ScorerConfig{
		Client:  Thresholds{ChallengeAt: 5, BlockAt: 15},
		Network: Thresholds{ChallengeAt: 18},
	})
	if err != nil {
		t.Fatal(err)
	}
	a := netip.MustParseAddr("203.0.113.9")
	b := netip.MustParseAddr("203.0.113.10")
	for _, tc := range []struct {
		name       string
		addr       netip.Addr
		rule       string
		points     float64
		client, nw Level
	}{
		{"one weak signal", a, "r1", 3, LevelNone, LevelNone},
		{"the same signal again", a, "r1", 3, LevelNone, LevelNone},
		{"two signals add up to a challenge", a, "r2", 3, LevelChallenge, LevelNone},
		{"certainty blocks", a, "r3", 10, LevelBlock, LevelNone},
		{"a neighbour alone is not challenged", b, "r1", 3, LevelNone, LevelChallenge},
		{"the neighbour again adds nothing to the network", b, "r1", 3, LevelNone, LevelChallenge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := s.Add(tc.addr, tc.rule, tc.points, t0)
			if o.Client != tc.client || o.Network != tc.nw {
				t.Errorf("client %v (%v), network %v (%v); want %v, %v", o.Client, o.ClientScore, o.Network, o.NetworkScore, tc.client, tc.nw)
			}
			if o.Net != netip.MustParsePrefix("203.0.113.0/24") || o.NetworkScore != min(o.NetworkScore, 19) {
				t.Errorf("network %v", o.Net)
			}
		})
	}
}

func TestScorerConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  ScorerConfig
	}{
		{"block below challenge", ScorerConfig{Client: Thresholds{ChallengeAt: 10, BlockAt: 5}}},
		{"negative", ScorerConfig{Network: Thresholds{ChallengeAt: -1}}},
		{"prefix", ScorerConfig{PrefixV4: 33}},
		{"half-life", ScorerConfig{Table: Config{HalfLife: -time.Second}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewScorer(tc.cfg); err == nil {
				t.Error("no error")
			}
		})
	}
}

func TestLevelString(t *testing.T) {
	if LevelChallenge.String() != "challenge" || Level(9).String() != "other" {
		t.Error(LevelChallenge.String(), Level(9).String())
	}
}

func BenchmarkTableAdd(b *testing.B) {
	tb, _ := NewTable(Config{})
	k := netip.MustParsePrefix("192.0.2.7/32")
	b.ReportAllocs()
	for b.Loop() {
		tb.Add(k, "r", 1, t0)
	}
}

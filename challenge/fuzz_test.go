package challenge

import (
	"encoding/base64"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/rules"
)

// FuzzClearance feeds cookie values to the clearance check: no panic, and
// nothing but a token signed for this client is cleared.
func FuzzClearance(f *testing.F) {
	g := testGate(f, Config{})
	sub := Subject{IP: netip.MustParseAddr("192.0.2.10"), UserAgent: chromeUA}
	good := string(appendClearance(nil, g.keys.current(), sub, 42, t0.Add(time.Hour))) // the same in every fuzz worker
	f.Add(good)
	f.Add(good[:len(good)-1] + "A")
	f.Add("")
	f.Add("AQ")
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return
		}
		_, _, _, r := verifyClearance(g.keys, s, sub, t0)
		if r == ReasonOK && s != good {
			t.Fatalf("cleared a token we did not sign: %q", s)
		}
		g.Cleared(&characteristics.Event{IP: sub.IP, UserAgent: sub.UserAgent, Cookies: []characteristics.Field{{Name: DefaultCookie, Value: s}}}, t0)
	})
}

// FuzzSolve feeds solve queries: no panic, and only a challenge we signed
// passes.
func FuzzSolve(f *testing.F) {
	g := testGate(f, Config{})
	ev := event("192.0.2.10", chromeUA)
	// A fixed nonce: the same challenge in every fuzz worker.
	c := string(appendChallenge(nil, g.keys.current(), subjectOf(ev), challengeSpec{tier: rules.TierProofOfWork, difficulty: 4, rule: "rule", returnURL: "/x"}, 42, t0))
	f.Add(solveQuery(c, Solve(c, 4), "/x"))
	f.Add(solveQuery(c, "99999999999999999", "/x"))
	f.Add("c=&n=1&r=%2F")
	f.Add("c=" + c[:40] + "&n=-1")
	f.Add("r=//evil.example&c=AAAA")
	f.Fuzz(func(t *testing.T, q string) {
		if len(q) > 8192 {
			return
		}
		e := event("192.0.2.10", chromeUA)
		e.Path, e.Query = SolvePath, q
		o := g.Solve(e, t0)
		if ReturnURL(o.Return) != o.Return {
			t.Fatalf("return URL %q is not local", o.Return)
		}
		if o.Reason == ReasonOK {
			s, err := ParseSolution(q)
			if err != nil || s.Challenge != c {
				t.Fatalf("passed a challenge we did not sign: %q", q)
			}
		}
	})
}

// FuzzBase64 checks the token decoder against encoding/base64's strict
// unpadded URL alphabet: the same bytes, the same refusals.
func FuzzBase64(f *testing.F) {
	for _, s := range []string{"", "AQ", "AQI", "AQID", "AB=", "A+C", "AAB", "_-_-", "AQIDBA"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.ContainsAny(s, "\r\n") { // encoding/base64 skips them; tokens never hold them
			return
		}
		want, err := base64.RawURLEncoding.Strict().DecodeString(s)
		dst := make([]byte, base64.RawURLEncoding.DecodedLen(len(s)))
		ok := decodeBase64(dst, s)
		if ok != (err == nil) {
			t.Fatalf("decodeBase64(%q) = %v, encoding/base64 err = %v", s, ok, err)
		}
		if ok && string(dst) != string(want) {
			t.Fatalf("decodeBase64(%q) = %x, want %x", s, dst, want)
		}
	})
}

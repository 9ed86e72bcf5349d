package challenge

import (
	"crypto/hmac"
	"crypto/sha256"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/rules"
)

var t0 = time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)

const chromeUA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

func testKeyring(t testing.TB, seeds ...byte) *Keyring {
	t.Helper()
	if len(seeds) == 0 {
		seeds = []byte{1}
	}
	var secrets [][KeySize]byte
	for _, s := range seeds {
		var k [KeySize]byte
		for i := range k {
			k[i] = s + byte(i)
		}
		secrets = append(secrets, k)
	}
	kr, err := NewKeyring(secrets...)
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

func testGate(t testing.TB, cfg Config) *Gate {
	t.Helper()
	if cfg.Keys == nil {
		cfg.Keys = testKeyring(t)
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func event(ip, ua string, cookies ...characteristics.Field) *characteristics.Event {
	return &characteristics.Event{IP: netip.MustParseAddr(ip), UserAgent: ua, Cookies: cookies}
}

func TestMACIsHMAC(t *testing.T) {
	kr := testKeyring(t)
	var secret [KeySize]byte
	for i := range secret {
		secret[i] = 1 + byte(i)
	}
	for _, msg := range []string{"", "a", strings.Repeat("x", 64), strings.Repeat("y", maxMessage)} {
		want := hmac.New(sha256.New, secret[:])
		want.Write([]byte(msg))
		got := kr.current().mac([]byte(msg))
		if !hmac.Equal(got[:], want.Sum(nil)) {
			t.Errorf("mac(%d bytes) differs from crypto/hmac", len(msg))
		}
	}
}

// TestMACConcurrent: more goroutines than the key holds HMAC states sign
// at once; every MAC is still the one crypto/hmac computes (run with -race).
func TestMACConcurrent(t *testing.T) {
	k := testKeyring(t).current()
	g := 4 * len(k.macs)
	want := make([][sha256.Size]byte, g)
	for i := range want {
		want[i] = k.mac([]byte(strings.Repeat(string(rune('a'+i%26)), i)))
	}
	var wg sync.WaitGroup
	for i := range g {
		wg.Go(func() {
			msg := []byte(strings.Repeat(string(rune('a'+i%26)), i))
			for range 200 {
				if got := k.mac(msg); got != want[i] {
					t.Errorf("goroutine %d: MAC differs", i)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestBase64(t *testing.T) {
	for n := 0; n < 80; n++ {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(i*37 + n)
		}
		enc := string(appendBase64(nil, src))
		dst := make([]byte, n)
		if !decodeBase64(dst, enc) || string(dst) != string(src) {
			t.Fatalf("round trip of %d bytes failed", n)
		}
	}
	dst := make([]byte, 2)
	if decodeBase64(dst, "AB=") || decodeBase64(dst, "A+C") || decodeBase64(dst, "AAB") {
		t.Error("accepted padding, a '+' or non-zero trailing bits")
	}
}

func TestClearance(t *testing.T) {
	g := testGate(t, Config{})
	tok := g.IssueClearance(Subject{IP: netip.MustParseAddr("192.0.2.10"), UserAgent: chromeUA}, t0)
	// One byte of the payload changed, its MAC kept.
	var raw [clearanceN]byte
	decodeBase64(raw[:], tok)
	raw[clrExpires+7]++
	flipped := appendBase64(nil, raw[:])
	other := testGate(t, Config{Keys: testKeyring(t, 9)})
	foreign := other.IssueClearance(Subject{IP: netip.MustParseAddr("192.0.2.10"), UserAgent: chromeUA}, t0)
	tests := []struct {
		name   string
		ip, ua string
		value  string
		now    time.Time
		want   Reason
	}{
		{"same client", "192.0.2.10", chromeUA, tok, t0.Add(time.Hour), ReasonOK},
		{"same /24", "192.0.2.200", chromeUA, tok, t0, ReasonOK},
		{"another /24", "192.0.3.10", chromeUA, tok, t0, ReasonNetwork},
		{"IPv4-mapped same /24", "::ffff:192.0.2.11", chromeUA, tok, t0, ReasonOK},
		{"another user agent", "192.0.2.10", "curl/8.5.0", tok, t0, ReasonUserAgent},
		{"one byte changed", "192.0.2.10", chromeUA, string(flipped), t0, ReasonBadSignature},
		{"expired", "192.0.2.10", chromeUA, tok, t0.Add(DefaultClearanceTTL), ReasonExpired},
		{"unknown key", "192.0.2.10", chromeUA, foreign, t0, ReasonUnknownKey},
		{"truncated", "192.0.2.10", chromeUA, tok[:len(tok)-1], t0, ReasonMalformed},
		{"empty", "192.0.2.10", chromeUA, "", t0, ReasonMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, r := verifyClearance(g.keys, tc.value, Subject{IP: netip.MustParseAddr(tc.ip), UserAgent: tc.ua}, tc.now)
			if r != tc.want {
				t.Errorf("got %s, want %s", r, tc.want)
			}
			ev := event(tc.ip, tc.ua, characteristics.Field{Name: "session", Value: "x"}, characteristics.Field{Name: DefaultCookie, Value: tc.value})
			if got := g.Cleared(ev, tc.now); got != (tc.want == ReasonOK) {
				t.Errorf("Cleared = %v", got)
			}
		})
	}
}

func TestClearanceIPv6(t *testing.T) {
	g := testGate(t, Config{})
	tok := g.IssueClearance(Subject{IP: netip.MustParseAddr("2001:db8:1:2::10"), UserAgent: chromeUA}, t0)
	for ip, want := range map[string]bool{"2001:db8:1:2:ffff::1": true, "2001:db8:1:3::10": false, "192.0.2.10": false} {
		if got := g.Cleared(event(ip, chromeUA, characteristics.Field{Name: DefaultCookie, Value: tok}), t0); got != want {
			t.Errorf("%s: Cleared = %v, want %v", ip, got, want)
		}
	}
}

func TestClearanceJA4(t *testing.T) {
	g := testGate(t, Config{})
	tok := g.IssueClearance(Subject{IP: netip.MustParseAddr("192.0.2.10"), UserAgent: chromeUA, JA4: "t13d1516h2_8daaf6152771_02713d6af862"}, t0)
	for ja4, want := range map[string]bool{"t13d1516h2_8daaf6152771_02713d6af862": true, "": true, "t13d1715h2_5b57614c22b0_3d5424432f57": false} {
		ev := event("192.0.2.10", chromeUA, characteristics.Field{Name: DefaultCookie, Value: tok})
		ev.TLS.JA4 = ja4
		if got := g.Cleared(ev, t0); got != want {
			t.Errorf("JA4 %q: Cleared = %v, want %v", ja4, got, want)
		}
	}
}

func TestRotation(t *testing.T) {
	oldRing := testKeyring(t, 1)
	old := testGate(t, Config{Keys: oldRing})
	sub := Subject{IP: netip.MustParseAddr("192.0.2.10"), UserAgent: chromeUA}
	oldTok := old.IssueClearance(sub, t0)
	// Rotated: key 2 signs, key 1 is still accepted.
	rotated := testGate(t, Config{Keys: testKeyring(t, 2, 1)})
	newTok := rotated.IssueClearance(sub, t0)
	if newTok[:8] == oldTok[:8] {
		t.Error("the new token names the old key")
	}
	for name, tok := range map[string]string{"old": oldTok, "new": newTok} {
		if !rotated.Cleared(event("192.0.2.10", chromeUA, characteristics.Field{Name: DefaultCookie, Value: tok}), t0) {
			t.Errorf("%s token refused during the overlap", name)
		}
	}
	// Next rotation drops key 1.
	next := testGate(t, Config{Keys: testKeyring(t, 3, 2)})
	if next.Cleared(event("192.0.2.10", chromeUA, characteristics.Field{Name: DefaultCookie, Value: oldTok}), t0) {
		t.Error("a token of a rotated-out key is accepted")
	}
	if !next.Cleared(event("192.0.2.10", chromeUA, characteristics.Field{Name: DefaultCookie, Value: newTok}), t0) {
		t.Error("the previous key's token is refused")
	}
}

func TestKeyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "challenge.key")
	kr, err := LoadKeyring(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, %v; want 0600", st.Mode().Perm(), err)
	}
	again, err := LoadKeyring(path)
	if err != nil || again.IDs()[0] != kr.IDs()[0] {
		t.Fatalf("a restart reads another key: %v", err)
	}
	if err := RotateKeyFile(path); err != nil {
		t.Fatal(err)
	}
	rot, err := LoadKeyring(path)
	if err != nil {
		t.Fatal(err)
	}
	if ids := rot.IDs(); len(ids) != 2 || ids[1] != kr.IDs()[0] || ids[0] == ids[1] {
		t.Errorf("after rotation ids %x; want a new key, then %x", ids, kr.IDs()[0])
	}
	if err := RotateKeyFile(path); err != nil {
		t.Fatal(err)
	}
	if rot2, _ := LoadKeyring(path); len(rot2.IDs()) != 2 || rot2.IDs()[1] != rot.IDs()[0] {
		t.Error("a second rotation should keep only the previous signing key")
	}
	os.Chmod(path, 0o640)
	if _, err := LoadKeyring(path); err == nil || !strings.Contains(err.Error(), "0640") {
		t.Errorf("a group-readable key file: %v", err)
	}
	bad := filepath.Join(dir, "bad.key")
	for content, want := range map[string]string{"abc\n": "line 1", "# only a comment\n": "no key", strings.Repeat("00", 32) + "\n": "zeros"} {
		os.WriteFile(bad, []byte(content), 0o600)
		if _, err := LoadKeyring(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want %q", content, err, want)
		}
	}
}

func TestSharingRevokes(t *testing.T) {
	g := testGate(t, Config{ShareAddresses: 3})
	tok := g.IssueClearance(Subject{IP: netip.MustParseAddr("192.0.2.10"), UserAgent: chromeUA}, t0)
	cookie := characteristics.Field{Name: DefaultCookie, Value: tok}
	for i, ip := range []string{"192.0.2.10", "192.0.2.10", "192.0.2.11", "198.51.100.7"} {
		want := ip != "198.51.100.7"
		if got := g.Cleared(event(ip, chromeUA, cookie), t0); got != want {
			t.Fatalf("presentation %d from %s: Cleared = %v", i, ip, got)
		}
	}
	// A fourth distinct address: revoked, for its first holder too.
	if g.Cleared(event("192.0.2.12", chromeUA, cookie), t0) || g.Cleared(event("192.0.2.10", chromeUA, cookie), t0) {
		t.Error("a clearance presented from 4 addresses is still accepted")
	}
	// Another clearance is not affected.
	tok2 := g.IssueClearance(Subject{IP: netip.MustParseAddr("192.0.2.10"), UserAgent: chromeUA}, t0)
	if !g.Cleared(event("192.0.2.10", chromeUA, characteristics.Field{Name: DefaultCookie, Value: tok2}), t0) {
		t.Error("a fresh clearance is refused")
	}
}

func TestSharingBounded(t *testing.T) {
	tr := newShareTracker(128, 2)
	for i := range 10000 {
		tr.see(uint64(i)*2+1, t0.Unix()+60, netip.MustParseAddr("192.0.2.1"), t0)
	}
	n := 0
	for i := range tr.shards {
		n += len(tr.shards[i].entries)
	}
	if n != 128 {
		t.Errorf("%d entries for 10000 clearances; want 128", n)
	}
}

type escalations struct {
	got []Reason
}

func (e *escalations) Escalate(ev *characteristics.Event, rule string, r Reason, now time.Time) {
	e.got = append(e.got, r)
}

func TestSolve(t *testing.T) {
	esc := &escalations{}
	reg := prometheus.NewRegistry()
	g := testGate(t, Config{Escalator: esc, Registerer: reg})
	g.SetRules([]string{"probe"})
	ev := event("192.0.2.10", chromeUA)
	ret := ReturnURL("/shop?q=1")
	c := string(g.AppendChallenge(nil, ev, "probe", rules.Challenge{Difficulty: 8}, ret, t0))
	n := Solve(c, 8)
	bad := "0"
	if proofOK(c, bad, 8) {
		bad = "1"
	}
	tests := []struct {
		name      string
		ip, ua    string
		query     string
		now       time.Time
		want      Reason
		escalated bool
	}{
		{"passes", "192.0.2.10", chromeUA, solveQuery(c, n, ret), t0.Add(time.Second), ReasonOK, false},
		{"bad proof", "192.0.2.10", chromeUA, solveQuery(c, bad, ret), t0, ReasonBadProof, true},
		{"no counter", "192.0.2.10", chromeUA, solveQuery(c, "", ret), t0, ReasonBadProof, true},
		{"expired", "192.0.2.10", chromeUA, solveQuery(c, n, ret), t0.Add(DefaultChallengeTTL + time.Second), ReasonExpired, false},
		{"another network", "192.0.3.10", chromeUA, solveQuery(c, n, ret), t0, ReasonNetwork, false},
		{"another user agent", "192.0.2.10", "python-requests/2.31", solveQuery(c, n, ret), t0, ReasonUserAgent, false},
		{"another return URL", "192.0.2.10", chromeUA, solveQuery(c, n, "/admin"), t0, ReasonReturnURL, false},
		{"tampered", "192.0.2.10", chromeUA, solveQuery(c[:20]+flip(c[20])+c[21:], n, ret), t0, ReasonBadSignature, false},
		{"garbage", "192.0.2.10", chromeUA, "c=%zz", t0, ReasonMalformed, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			esc.got = nil
			ev := event(tc.ip, tc.ua)
			ev.Path, ev.Query = SolvePath, tc.query
			o := g.Solve(ev, tc.now)
			if o.Reason != tc.want || (len(esc.got) > 0) != tc.escalated || o.Escalated != tc.escalated {
				t.Fatalf("reason %s escalated %v (%v); want %s %v", o.Reason, o.Escalated, esc.got, tc.want, tc.escalated)
			}
			if tc.want != ReasonOK {
				if o.Clearance != "" {
					t.Error("a clearance for a failed solve")
				}
				return
			}
			if o.Return != "/shop?q=1" || o.Rule != "probe" {
				t.Errorf("return %q rule %q", o.Return, o.Rule)
			}
			if !g.Cleared(event(tc.ip, tc.ua, characteristics.Field{Name: DefaultCookie, Value: o.Clearance}), tc.now) {
				t.Error("the clearance of a passed challenge is refused")
			}
		})
	}
	if v := testutil.ToFloat64(g.m.passed.WithLabelValues("probe")); v != 1 {
		t.Errorf("passed_total{rule=probe} = %v", v)
	}
	if v := testutil.ToFloat64(g.m.failed.WithLabelValues("probe", "bad_proof")); v != 2 {
		t.Errorf("failed_total{rule=probe,reason=bad_proof} = %v", v)
	}
	if v := testutil.ToFloat64(g.m.failed.WithLabelValues("other", "malformed")); v != 1 {
		t.Errorf("failed_total{rule=other,reason=malformed} = %v", v)
	}
}

func TestCookieTier(t *testing.T) {
	g := testGate(t, Config{})
	ev := event("192.0.2.10", chromeUA)
	c := string(g.AppendChallenge(nil, ev, "r", rules.Challenge{Tier: rules.TierCookie}, "/", t0))
	ev.Path, ev.Query = SolvePath, strings.TrimPrefix(SolveURL(c, "", "/"), SolvePath+"?")
	if o := g.Solve(ev, t0); o.Reason != ReasonOK || o.Clearance == "" {
		t.Errorf("cookie tier: %s", o.Reason)
	}
}

func flip(c byte) string {
	if c == 'A' {
		return "B"
	}
	return "A"
}

func solveQuery(c, n, ret string) string {
	return strings.TrimPrefix(SolveURL(c, n, ret), SolvePath+"?")
}

func TestEscalateUnsolved(t *testing.T) {
	esc := &escalations{}
	g := testGate(t, Config{Escalator: esc, MaxUnsolved: 3})
	ev := event("192.0.2.10", chromeUA)
	for i := 1; i <= 3; i++ {
		if g.Shown(ev, "r", t0.Add(time.Duration(i)*time.Second)) {
			t.Fatalf("escalated after %d challenges", i)
		}
	}
	if !g.Shown(ev, "r", t0.Add(4*time.Second)) || len(esc.got) != 1 || esc.got[0] != ReasonUnsolved {
		t.Fatalf("not escalated after 4 unsolved challenges: %v", esc.got)
	}
	// A pass starts the count again.
	other := event("192.0.2.20", chromeUA)
	for i := 0; i < 3; i++ {
		g.Shown(other, "r", t0)
	}
	c := string(g.AppendChallenge(nil, other, "r", rules.Challenge{Difficulty: 4}, "/", t0))
	other.Path, other.Query = SolvePath, solveQuery(c, Solve(c, 4), "/")
	if o := g.Solve(other, t0); o.Reason != ReasonOK {
		t.Fatal(o.Reason)
	}
	if g.Shown(other, "r", t0) {
		t.Error("escalated right after passing")
	}
	// The count is per window: old challenges are forgotten.
	late := event("192.0.2.30", chromeUA)
	for i := 0; i < 10; i++ {
		if g.Shown(late, "r", t0.Add(time.Duration(i)*2*DefaultClearanceTTL)) {
			t.Fatal("escalated for challenges spread over days")
		}
	}
}

func TestReturnURL(t *testing.T) {
	for in, want := range map[string]string{"/a?b=c": "/a?b=c", "": "/", "//evil.example/": "/", "/\\evil.example": "/", "https://evil.example/": "/",
		"/.guardd/solve?c=x": "/", "/a b": "/", "/a\r\nSet-Cookie: x": "/"} {
		if got := ReturnURL(in); got != want {
			t.Errorf("ReturnURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPage(t *testing.T) {
	for _, tier := range []rules.ChallengeTier{rules.TierProofOfWork, rules.TierCookie} {
		w := httptest.NewRecorder()
		if err := WritePage(w, 403, Page{Challenge: "abc_-", Tier: tier, Difficulty: 17, Return: `/x?a=1&b="<script>`}); err != nil {
			t.Fatal(err)
		}
		body := w.Body.String()
		if w.Code != 403 || w.Header().Get("Content-Type") != "text/html; charset=utf-8" || w.Header().Get("Cache-Control") != "no-store" {
			t.Errorf("%s: %d %v", tier, w.Code, w.Header())
		}
		for _, want := range []string{`<html lang="en">`, "<title>Checking your browser</title>", `role="status"`, `aria-live="polite"`, "<h1>"} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: page lacks %s", tier, want)
			}
		}
		if strings.Contains(body, `"<script>`) {
			t.Errorf("%s: the return URL is not escaped", tier)
		}
		if tier == rules.TierCookie {
			if !strings.Contains(body, `http-equiv="refresh"`) || strings.Contains(body, "<script>") {
				t.Error("cookie tier: want a meta refresh and no script")
			}
		} else if !strings.Contains(body, "<noscript>") || !strings.Contains(body, "function block(") {
			t.Error("proof-of-work tier: want a script and a <noscript> explanation")
		}
	}
}

// TestPageScript runs the page's SHA-256 and search in node and checks it
// finds a proof the Go side accepts: the same code runs in the browser.
func TestPageScript(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	g := testGate(t, Config{})
	for _, ret := range []string{"/", "/a/long/path/that/makes/the/challenge/cross/a/block?x=1"} {
		for _, d := range []int{1, 12} {
			c := string(g.AppendChallenge(nil, event("192.0.2.10", chromeUA), "a-rule-name", rules.Challenge{Difficulty: d}, ret, t0))
			script := `
var attrs={"data-challenge":` + jsString(c) + `,"data-difficulty":"` + string(rune('0'+d/10)) + string(rune('0'+d%10)) + `","data-return":` + jsString(ret) + `};
var root={getAttribute:function(k){return attrs[k]},setAttribute:function(){}};
var status={textContent:""};
global.document={getElementById:function(id){return id==="guardd-challenge"?root:status}};
global.location={replace:function(u){console.log(u);process.exit(0)}};
` + powJS
			out, err := exec.Command(node, "-e", script).CombinedOutput()
			if err != nil {
				t.Fatalf("node: %v\n%s", err, out)
			}
			u := strings.TrimSpace(string(out))
			ev := event("192.0.2.10", chromeUA)
			ev.Path, ev.Query, _ = strings.Cut(u, "?")
			if o := g.Solve(ev, t0); o.Reason != ReasonOK {
				t.Errorf("difficulty %d, return %q: the script's solution %q: %s", d, ret, u, o.Reason)
			}
		}
	}
}

func jsString(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

func TestClearedAllocs(t *testing.T) {
	g := testGate(t, Config{})
	tok := g.IssueClearance(Subject{IP: netip.MustParseAddr("192.0.2.10"), UserAgent: chromeUA}, t0)
	ok := event("192.0.2.10", chromeUA, characteristics.Field{Name: "a", Value: "b"}, characteristics.Field{Name: DefaultCookie, Value: tok})
	bad := event("192.0.3.10", chromeUA, characteristics.Field{Name: DefaultCookie, Value: tok})
	none := event("192.0.2.10", chromeUA)
	long := event("192.0.2.10", strings.Repeat("x", 5000), characteristics.Field{Name: DefaultCookie, Value: tok})
	for name, ev := range map[string]*characteristics.Event{"valid": ok, "other network": bad, "none": none, "long user agent": long} {
		if n := testing.AllocsPerRun(100, func() { g.Cleared(ev, t0) }); n != 0 {
			t.Errorf("%s: Cleared allocates %v times", name, n)
		}
	}
}

func BenchmarkCleared(b *testing.B) {
	g := testGate(b, Config{})
	tok := g.IssueClearance(Subject{IP: netip.MustParseAddr("192.0.2.10"), UserAgent: chromeUA}, t0)
	for name, ev := range map[string]*characteristics.Event{
		"valid": event("192.0.2.10", chromeUA, characteristics.Field{Name: DefaultCookie, Value: tok}),
		"none":  event("192.0.2.10", chromeUA),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				g.Cleared(ev, t0)
			}
		})
	}
}

func BenchmarkSolveDefault(b *testing.B) {
	g := testGate(b, Config{})
	ev := event("192.0.2.10", chromeUA)
	i := 0
	for b.Loop() {
		i++
		c := string(g.AppendChallenge(nil, ev, "r", rules.Challenge{}, "/", t0.Add(time.Duration(i))))
		Solve(c, DefaultDifficulty)
	}
}

func TestShareEntrySize(t *testing.T) {
	if n := unsafe.Sizeof(shareEntry{}); n != 64 {
		t.Errorf("shareEntry is %d bytes, want 64 (one cache line)", n)
	}
}

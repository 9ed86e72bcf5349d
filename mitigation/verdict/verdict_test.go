package verdict

import (
	"strings"
	"testing"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/throttle"
	"github.com/guardd/guardd/rules"
)

// tables is a Request over fixed tables; it records what Decide asked.
type tables struct {
	allowlisted, cleared, page bool
	tv                         throttle.Verdict
	ms                         []Mitigation
	next                       int
	counted, askedCleared      int
}

func (r *tables) Allowlisted() bool          { return r.allowlisted }
func (r *tables) Count()                     { r.counted++ }
func (r *tables) Throttle() throttle.Verdict { return r.tv }
func (r *tables) Cleared() bool              { r.askedCleared++; return r.cleared }
func (r *tables) PageView() bool             { return r.page }
func (r *tables) Next() (Mitigation, bool) {
	if r.next == len(r.ms) {
		return Mitigation{}, false
	}
	r.next++
	return r.ms[r.next-1], true
}

func TestDecide(t *testing.T) {
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	exp := now.Add(time.Minute)
	thr := &rules.Rule{Name: "thr", Requests: 5, Period: time.Minute}
	m := func(a mitigation.Action, rule string, order int) Mitigation {
		return Mitigation{Action: a, Rule: rule, Expires: exp, Order: order, Fallback: mitigation.ActionRateLimit}
	}
	chal := func(rule string, order int, fallback mitigation.Action) Mitigation {
		c := m(mitigation.ActionChallenge, rule, order)
		c.Fallback = fallback
		return c
	}
	refused := throttle.Verdict{Matched: true, Refused: true, Rule: thr, Retry: 1500 * time.Millisecond}
	for _, tc := range []struct {
		name        string
		r           tables
		action      mitigation.Action // ActionLog: allowed
		rule        string
		shed, count bool
	}{
		{"nothing", tables{}, mitigation.ActionLog, "", false, true},
		{"allowlisted", tables{allowlisted: true, ms: []Mitigation{m(mitigation.ActionBlock, "b", 0)}, tv: refused}, mitigation.ActionLog, "", false, false},
		{"log enforces nothing", tables{ms: []Mitigation{m(mitigation.ActionLog, "l", 0)}}, mitigation.ActionLog, "", false, true},
		{"strongest", tables{ms: []Mitigation{m(mitigation.ActionRateLimit, "r", 0), m(mitigation.ActionBlock, "b", 1), m(mitigation.ActionShadowBan, "s", 2)}}, mitigation.ActionBlock, "b", false, true},
		{"tie: earliest rule", tables{ms: []Mitigation{m(mitigation.ActionBlock, "b2", 2), m(mitigation.ActionBlock, "b1", 1), m(mitigation.ActionBlock, "manual", NoRule)}}, mitigation.ActionBlock, "b1", false, true},
		{"throttle refuses", tables{tv: refused}, mitigation.ActionThrottle, "thr", false, true},
		{"rate limit outranks throttle", tables{tv: refused, ms: []Mitigation{m(mitigation.ActionRateLimit, "r", 0)}}, mitigation.ActionRateLimit, "r", false, true},
		{"shed", tables{tv: throttle.Verdict{Shed: true, Retry: time.Second}}, mitigation.ActionLog, "", true, true},
		{"mitigation over shed", tables{tv: throttle.Verdict{Shed: true}, ms: []Mitigation{m(mitigation.ActionBlock, "b", 0)}}, mitigation.ActionBlock, "b", false, true},
		{"challenge a page view", tables{page: true, ms: []Mitigation{chal("c", 0, mitigation.ActionBlock)}}, mitigation.ActionChallenge, "c", false, true},
		{"challenge cleared", tables{page: true, cleared: true, ms: []Mitigation{chal("c", 0, mitigation.ActionBlock)}}, mitigation.ActionLog, "", false, true},
		{"cleared, not a page view", tables{cleared: true, ms: []Mitigation{chal("c", 0, mitigation.ActionBlock)}}, mitigation.ActionLog, "", false, true},
		{"fallback block", tables{ms: []Mitigation{chal("c", 0, mitigation.ActionBlock)}}, mitigation.ActionBlock, "c", false, true},
		{"fallback rate_limit", tables{ms: []Mitigation{chal("c", 0, mitigation.ActionRateLimit)}}, mitigation.ActionRateLimit, "c", false, true},
		{"fallback log", tables{ms: []Mitigation{chal("c", 0, mitigation.ActionLog)}}, mitigation.ActionLog, "", false, true},
		{"fallback log, throttle refuses", tables{tv: refused, ms: []Mitigation{chal("c", 0, mitigation.ActionLog)}}, mitigation.ActionThrottle, "thr", false, true},
		{"challenge under shadowban", tables{page: true, ms: []Mitigation{chal("c", 0, mitigation.ActionBlock), m(mitigation.ActionShadowBan, "s", 1)}}, mitigation.ActionShadowBan, "s", false, true},
		{"challenge over rate limit and throttle", tables{page: true, tv: refused, ms: []Mitigation{m(mitigation.ActionRateLimit, "r", 0), chal("c", 1, mitigation.ActionBlock)}}, mitigation.ActionChallenge, "c", false, true},
		{"two challenges, one clearance", tables{page: true, cleared: true, ms: []Mitigation{chal("c1", 0, mitigation.ActionBlock), chal("c2", 1, mitigation.ActionBlock)}}, mitigation.ActionLog, "", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r
			d := Decide(&r, now)
			if d.Allow != (tc.action == mitigation.ActionLog && !tc.shed) || d.Action != tc.action || d.Rule != tc.rule || d.Shed != tc.shed {
				t.Fatalf("%+v, want action %s rule %q shed %v", d, tc.action, tc.rule, tc.shed)
			}
			if (r.counted == 1) != tc.count {
				t.Errorf("counted %d times, want %v", r.counted, tc.count)
			}
			if r.askedCleared > 1 {
				t.Errorf("clearance checked %d times", r.askedCleared)
			}
			switch {
			case d.Shed:
				if d.Retry != time.Second {
					t.Errorf("shed retry %s, want the shedder's 1s", d.Retry)
				}
			case d.Action == mitigation.ActionThrottle:
				if d.Retry != 2*time.Second || d.Limit != 5 || d.Window != time.Minute {
					t.Errorf("throttle %+v: want retry 2s (whole seconds, up), limit 5 per minute", d)
				}
			case !d.Allow && d.Retry != time.Minute:
				t.Errorf("retry %s, want the minute until the mitigation ends", d.Retry)
			}
		})
	}
}

func TestPageView(t *testing.T) {
	for _, tc := range []struct {
		method, accept string
		page           bool
	}{
		{"GET", "", true},
		{"HEAD", "", true},
		{"GET", "text/html,application/xhtml+xml,*/*;q=0.8", true},
		{"GET", "Text/HTML", true},
		{"GET", "application/json", false},
		{"GET", "*/*", false},
		{"POST", "text/html", false},
		{"PUT", "", false},
		{"get", "", false},
		{"", "", false},
	} {
		ev := &characteristics.Event{Method: tc.method}
		if tc.accept != "" {
			ev.Headers = []characteristics.Field{{Name: "accept", Value: tc.accept}}
		}
		if got := PageView(ev); got != tc.page {
			t.Errorf("%s accept %q: page view %v, want %v", tc.method, tc.accept, got, tc.page)
		}
	}
}

func TestDecideAllocs(t *testing.T) {
	r := &tables{page: true, ms: []Mitigation{{Action: mitigation.ActionChallenge, Rule: "c"}, {Action: mitigation.ActionBlock, Rule: "b"}}}
	now := time.Now()
	if n := testing.AllocsPerRun(100, func() { r.next = 0; Decide(r, now) }); n != 0 {
		t.Errorf("%v allocs", n)
	}
}

// FuzzPageView checks PageView's Accept matching against an ASCII lower
// case copy and strings.Contains as the reference.
func FuzzPageView(f *testing.F) {
	for _, s := range []string{"", "text/html", "TEXT/HTML;q=0.9", "application/json", "*/*", "text/htm", "xtext/htmlx", "tExT/hTmL"} {
		f.Add("GET", s)
	}
	f.Fuzz(func(t *testing.T, method, accept string) {
		if len(accept) > 4096 {
			return
		}
		ev := &characteristics.Event{Method: method, Headers: []characteristics.Field{{Name: "accept", Value: accept}}}
		want := (method == "GET" || method == "HEAD") && strings.Contains(asciiLower(accept), "text/html")
		if got := PageView(ev); got != want {
			t.Errorf("%q accept %q: %v, want %v", method, accept, got, want)
		}
	})
}

// asciiLower lowers ASCII letters only, as HTTP's case-insensitivity does
// (strings.ToLower would also fold "K", the Kelvin sign, to "k").
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

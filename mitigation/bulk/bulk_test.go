package bulk

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/guardd/guardd/mitigation"
)

var t0 = time.Date(2026, 11, 25, 18, 0, 0, 0, time.UTC)

func TestRead(t *testing.T) {
	d := Defaults{Action: mitigation.ActionBlock, Duration: time.Hour}
	tests := []struct {
		name   string
		f      Format
		in     string
		want   string // "scope action rule expires" per mitigation, joined by "|"
		errSub string
	}{
		{"list", List, "# banned\n203.0.113.7\n\n198.51.100.0/24  # a net\n::ffff:192.0.2.1\n", "ip.src=203.0.113.7 block import 19:00|ip.src.prefix=198.51.100.0/24 block import 19:00|ip.src=192.0.2.1 block import 19:00", ""},
		{"list bad", List, "203.0.113.7\nexample.com\n", "", `line 2: value "example.com": want an address or a CIDR`},
		{"jsonl export form", JSONLines, `{"id":3,"rule":"scanner_ua","action":"rate_limit","scope":{"ip.src":"203.0.113.7"},"created":"2026-11-25T17:00:00Z","expires":"2026-11-25T20:00:00Z","origin":"rule"}` + "\n",
			"ip.src=203.0.113.7 rate_limit scanner_ua 20:00", ""},
		{"jsonl value and duration", JSONLines, `{"value":"2001:db8::/64","duration":"30m","action":"firewall","reason":"abuse"}`, "ip.src.prefix=2001:db8::/64 firewall import: abuse 18:30", ""},
		{"jsonl multi scope", JSONLines, `{"scope":{"http.cookies[\"session\"]":"x","http.path":"/login"}}`, `http.cookies["session"]=x http.path=/login block import 19:00`, ""},
		{"jsonl unknown field", JSONLines, "\n" + `{"ip":"203.0.113.7"}`, "", `line 2: json: unknown field "ip"`},
		{"jsonl bad action", JSONLines, `{"value":"203.0.113.7","action":"ban"}`, "", "line 1: action: unknown action \"ban\""},
		{"jsonl past", JSONLines, `{"value":"203.0.113.7","expires":"2020-01-01T00:00:00Z"}`, "", "line 1: expires 2020-01-01T00:00:00Z is not after now"},
		{"jsonl both", JSONLines, `{"value":"203.0.113.7","scope":{"ip.src":"203.0.113.8"}}`, "", "both scope and value"},
		{"csv export form", CSV, "id,rule,action,scope,created,expires,origin\n1,manual,block,\"{\"\"ip.src\"\":\"\"203.0.113.7\"\"}\",2026-11-25T17:00:00Z,2026-11-25T21:00:00Z,api\n", "ip.src=203.0.113.7 block manual 21:00", ""},
		{"csv cscli-like", CSV, "value,duration,action,characteristic\n203.0.113.7,2h,rate_limit,\n10.0.0.0/8,,,\nUA,,,http.user_agent\n", "ip.src=203.0.113.7 rate_limit import 20:00|ip.src.prefix=10.0.0.0/8 block import 19:00|http.user_agent=UA block import 19:00", ""},
		{"csv unknown column", CSV, "ip,duration\n", "", `csv line 1: unknown column "ip"`},
		{"csv no scope", CSV, "rule,duration\nx,1h\n", "", "want a scope or a value column"},
		{"csv bad row", CSV, "value\n203.0.113.7\n203.0.113.x\n", "", "csv line 3: value \"203.0.113.x\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := Read(strings.NewReader(tt.in), tt.f, d, t0)
			if tt.errSub != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errSub) {
					t.Fatalf("err = %v, want %q", err, tt.errSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range ms {
				got = append(got, fmt.Sprintf("%s %s %s %s", m.Scope, m.Action, m.Rule, m.Expires.UTC().Format("15:04")))
			}
			if g := strings.Join(got, "|"); g != tt.want {
				t.Errorf("got  %s\nwant %s", g, tt.want)
			}
		})
	}
	if _, err := Read(strings.NewReader("203.0.113.7\n"), List, Defaults{}, t0); err == nil || !strings.Contains(err.Error(), "no default duration") {
		t.Errorf("list without duration: %v", err)
	}
}

func TestFormats(t *testing.T) {
	for _, c := range []struct {
		name string
		want Format
	}{{"a.csv", CSV}, {"b.TXT", List}, {"c.jsonl", JSONLines}, {"d", JSONLines}} {
		if got := FormatOf(c.name); got != c.want {
			t.Errorf("FormatOf(%s) = %s", c.name, got)
		}
	}
	for _, s := range []string{"jsonl", "csv", "list"} {
		if f, err := ParseFormat(s); err != nil || f.String() != s {
			t.Errorf("ParseFormat(%s) = %v, %v", s, f, err)
		}
	}
	if _, err := ParseFormat("xml"); err == nil {
		t.Error("xml accepted")
	}
}

// TestRoundTrip: what Write writes, Read reads back the same, in every format.
func TestRoundTrip(t *testing.T) {
	ms := []mitigation.Mitigation{
		{ID: 1, Rule: "scanner_ua", Action: mitigation.ActionRateLimit, Scope: mitigation.Scope{{Name: "ip.src", Value: "203.0.113.7"}}, Expires: t0.Add(time.Hour)},
		{ID: 2, Rule: "manual: x", Action: mitigation.ActionFirewall, Scope: mitigation.Scope{{Name: "ip.src.prefix", Value: "2001:db8::/64"}}, Expires: t0.Add(2 * time.Hour)},
		{ID: 3, Rule: "spam", Action: mitigation.ActionShadowBan, Scope: mitigation.Scope{{Name: `http.cookies["session"]`, Value: "a,\"b\"\nc"}}, Expires: t0.Add(3 * time.Hour)},
	}
	for f := range numFormats {
		t.Run(f.String(), func(t *testing.T) {
			var buf bytes.Buffer
			skipped, err := Write(&buf, f, ms)
			if err != nil {
				t.Fatal(err)
			}
			want := ms
			if f == List {
				want = ms[:2]
				if skipped != 1 {
					t.Errorf("skipped %d, want 1", skipped)
				}
			}
			got, err := Read(&buf, f, Defaults{Duration: time.Hour}, t0)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("read %d, want %d", len(got), len(want))
			}
			for i := range want {
				g, w := got[i], want[i]
				if !g.Scope.Equal(w.Scope) {
					t.Errorf("#%d scope %s, want %s", i, g.Scope, w.Scope)
				}
				if f != List && (g.Rule != w.Rule || g.Action != w.Action || !g.Expires.Equal(w.Expires)) {
					t.Errorf("#%d = %s %s %s, want %s %s %s", i, g.Rule, g.Action, g.Expires, w.Rule, w.Action, w.Expires)
				}
			}
		})
	}
}

func TestImporter(t *testing.T) {
	st, err := mitigation.New(mitigation.Config{Allowlist: mitigation.Allowlist{}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	im := &Importer{Store: st, Now: func() time.Time { return t0 }}
	for _, c := range []struct {
		body string
		code int
		want string
	}{
		{`{"value":"203.0.113.7","duration":"1h"}` + "\n" + `{"value":"203.0.113.8","duration":"1h"}`, 200, `{"added":2,"allowlisted":0}`},
		{`{"value":"203.0.113.9","duration":"1h"}` + "\n" + `{"value":"bad","duration":"1h"}`, 400, `line 2`},
	} {
		w := httptest.NewRecorder()
		im.ServeHTTP(w, httptest.NewRequest("POST", "/v1/mitigations/bulk", strings.NewReader(c.body)))
		if w.Code != c.code || !strings.Contains(w.Body.String(), c.want) {
			t.Errorf("%q: %d %s, want %d %s", c.body, w.Code, w.Body, c.code, c.want)
		}
	}
	if st.Len() != 2 {
		t.Errorf("store holds %d, want 2 (a bad body adds nothing)", st.Len())
	}
	w := httptest.NewRecorder()
	(&Importer{Store: st, MaxBytes: 10}).ServeHTTP(w, httptest.NewRequest("POST", "/", strings.NewReader(`{"value":"203.0.113.7","duration":"1h"}`)))
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("over the cap: %d", w.Code)
	}
}

func FuzzRead(f *testing.F) {
	f.Add(uint8(0), `{"value":"203.0.113.7","duration":"1h"}`)
	f.Add(uint8(0), `{"scope":{"ip.src":"::1"},"expires":"2027-01-01T00:00:00Z","action":"log"}`)
	f.Add(uint8(1), "value,duration\n203.0.113.7,1h\n")
	f.Add(uint8(1), "id,rule,action,scope,created,expires,origin\n1,r,block,\"{\"\"ip.src\"\":\"\"1.2.3.4\"\"}\",,2027-01-01T00:00:00Z,api\n")
	f.Add(uint8(2), "203.0.113.7\n10.0.0.0/8 # x\n")
	f.Fuzz(func(t *testing.T, fb uint8, in string) {
		if len(in) > 1<<16 {
			return
		}
		fm := Format(fb % uint8(numFormats))
		ms, err := Read(strings.NewReader(in), fm, Defaults{Duration: time.Hour}, t0)
		if err != nil {
			return
		}
		// What was read is canonical and writes and reads back the same.
		var buf bytes.Buffer
		if _, err := Write(&buf, JSONLines, ms); err != nil {
			t.Fatal(err)
		}
		again, err := Read(&buf, JSONLines, Defaults{}, t0)
		if err != nil {
			t.Fatalf("re-reading %q: %v", buf.String(), err)
		}
		if len(again) != len(ms) {
			t.Fatalf("read back %d of %d", len(again), len(ms))
		}
		for i := range ms {
			if !again[i].Scope.Equal(ms[i].Scope) || again[i].Rule != ms[i].Rule || !again[i].Expires.Equal(ms[i].Expires) {
				t.Fatalf("#%d: %+v became %+v", i, ms[i], again[i])
			}
		}
	})
}

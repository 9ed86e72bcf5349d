package crowdsec

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/guardd/guardd/mitigation"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// env is a store, a server on it, and a clock both read.
type env struct {
	t     testing.TB
	now   time.Time
	store *mitigation.Store
	srv   *Server
	keys  string
}

func newEnv(t testing.TB, history int, cfg Config) *env {
	t.Helper()
	e := &env{t: t, now: t0}
	var err error
	e.store, err = mitigation.New(mitigation.Config{History: history, Now: func() time.Time { return e.now }}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.keys = filepath.Join(t.TempDir(), KeyFileName)
	cfg.KeyFile = e.keys
	cfg.Now = func() time.Time { return e.now }
	e.srv, err = New(cfg, e.store, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) key(name string) string {
	e.t.Helper()
	k, err := AddBouncer(e.keys, name, e.now)
	if err != nil {
		e.t.Fatal(err)
	}
	return k
}

func (e *env) add(rule string, a mitigation.Action, name, value string, ttl time.Duration) mitigation.Mitigation {
	e.t.Helper()
	m, ok, err := e.store.Add(mitigation.Mitigation{Rule: rule, Action: a, Scope: mitigation.Scope{{Name: name, Value: value}}, Expires: e.now.Add(ttl)}, e.now)
	if err != nil || !ok {
		e.t.Fatalf("add %s=%s: %v %v", name, value, ok, err)
	}
	return m
}

func (e *env) get(key, target string) (int, string) {
	e.t.Helper()
	r := httptest.NewRequest("GET", target, nil)
	if key != "" {
		r.Header.Set("X-Api-Key", key)
	}
	w := httptest.NewRecorder()
	e.srv.ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

type wireDecision struct {
	Duration string `json:"duration"`
	ID       uint64 `json:"id"`
	Origin   string `json:"origin"`
	Scenario string `json:"scenario"`
	Scope    string `json:"scope"`
	Type     string `json:"type"`
	Value    string `json:"value"`
}

type wireStream struct {
	Deleted []wireDecision `json:"deleted"`
	New     []wireDecision `json:"new"`
}

func (e *env) stream(key string, startup bool, extra string) wireStream {
	e.t.Helper()
	code, body := e.get(key, fmt.Sprintf("/v1/decisions/stream?startup=%t%s", startup, extra))
	if code != 200 {
		e.t.Fatalf("stream: %d %s", code, body)
	}
	var s wireStream
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		e.t.Fatalf("stream body %s: %v", body, err)
	}
	return s
}

func values(ds []wireDecision) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Scope+":"+d.Type+":"+d.Value)
	}
	sort.Strings(out)
	return out
}

// TestShapeMatchesCrowdSec compares the members and their order with what
// CrowdSec 1.4.6 answered.
func TestShapeMatchesCrowdSec(t *testing.T) {
	sample, err := os.ReadFile("testdata/crowdsec-1.4.6-stream-startup.json")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, 0, Config{})
	k := e.key("fw")
	e.add("LePresidente/http-generic-401-bf", mitigation.ActionBlock, "ip.src", "203.0.113.1", 3*time.Hour)
	e.add("LePresidente/http-generic-401-bf", mitigation.ActionBlock, "ip.src", "203.0.113.2", 3*time.Hour)
	_, body := e.get(k, "/v1/decisions/stream?startup=true")
	skel := func(b string) string {
		// Keep member names and structure, drop values.
		var out strings.Builder
		inStr, key := false, false
		for i := 0; i < len(b); i++ {
			c := b[i]
			switch {
			case c == '"':
				inStr = !inStr
				if inStr {
					key = i > 0 && (b[i-1] == '{' || b[i-1] == ',')
				}
				if key {
					out.WriteByte(c)
				}
			case inStr:
				if key {
					out.WriteByte(c)
				}
			case strings.IndexByte("{}[],:", c) >= 0 || c == 'n':
				out.WriteByte(c)
			}
		}
		return out.String()
	}
	if got, want := skel(strings.TrimSpace(body)), skel(strings.TrimSpace(string(sample))); got != want {
		t.Errorf("shape differs from CrowdSec's:\n got %s\nwant %s", got, want)
	}
	s := e.stream(k, false, "")
	if s.New != nil || s.Deleted != nil {
		t.Errorf("idle poll = %+v, want both null", s)
	}
	if _, body := e.get(k, "/v1/decisions/stream"); strings.TrimSpace(body) != `{"deleted":null,"new":null}` {
		t.Errorf("idle body = %s", body)
	}
}

func TestStream(t *testing.T) {
	e := newEnv(t, 0, Config{})
	k1, k2 := e.key("fw1"), e.key("fw2")
	a := e.add("r1", mitigation.ActionBlock, "ip.src", "203.0.113.7", time.Hour)
	e.add("r1", mitigation.ActionFirewall, "ip.src.prefix", "198.51.100.0/24", time.Hour)
	e.add("r1", mitigation.ActionRateLimit, "ip.src", "2001:db8::1", time.Hour)
	e.add("r1", mitigation.ActionShadowBan, "ip.src", "203.0.113.8", time.Hour)
	e.add("r1", mitigation.ActionLog, "ip.src", "203.0.113.9", time.Hour)
	e.add("r1", mitigation.ActionBlock, "tls.ja4", "t13d1516h2_8daaf6152771_02713d6af862", time.Hour)

	s := e.stream(k1, true, "")
	want := []string{"Ip:ban:203.0.113.7", "Ip:captcha:2001:db8::1", "Range:ban:198.51.100.0/24"}
	if got := values(s.New); !reflect.DeepEqual(got, want) || s.Deleted != nil {
		t.Fatalf("startup new = %v deleted %v, want %v", got, s.Deleted, want)
	}
	if s.New[0].Duration != "1h0m0s" || s.New[0].Origin != "crowdsec" || s.New[0].Scenario != "r1" || s.New[0].ID != a.ID {
		t.Errorf("first decision = %+v", s.New[0])
	}

	steps := []struct {
		name        string
		do          func()
		new, delete []string
	}{
		{"nothing", func() {}, nil, nil},
		{"add", func() { e.add("r2", mitigation.ActionBlock, "ip.src", "192.0.2.1", time.Minute) }, []string{"Ip:ban:192.0.2.1"}, nil},
		{"delete", func() { e.store.Delete(a.ID) }, nil, []string{"Ip:ban:203.0.113.7"}},
		{"second rule on one value, weaker", func() {
			e.add("r3", mitigation.ActionRateLimit, "ip.src", "192.0.2.1", time.Minute)
		}, nil, nil},
		{"expire", func() {
			e.now = e.now.Add(2 * time.Minute)
			e.store.Expire(e.now)
		}, nil, []string{"Ip:ban:192.0.2.1"}},
		{"extend", func() { e.add("r1", mitigation.ActionFirewall, "ip.src.prefix", "198.51.100.0/24", 3*time.Hour) },
			[]string{"Range:ban:198.51.100.0/24"}, []string{"Range:ban:198.51.100.0/24"}},
		{"ban beats captcha on one value", func() { e.add("r4", mitigation.ActionBlock, "ip.src", "2001:db8::1", time.Hour) },
			[]string{"Ip:ban:2001:db8::1"}, []string{"Ip:captcha:2001:db8::1"}},
		{"action to log hides", func() { e.add("r1", mitigation.ActionLog, "ip.src.prefix", "198.51.100.0/24", time.Hour) },
			nil, []string{"Range:ban:198.51.100.0/24"}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.do()
			s := e.stream(k1, false, "")
			if got := values(s.New); !reflect.DeepEqual(got, st.new) {
				t.Errorf("new = %v, want %v", got, st.new)
			}
			if got := values(s.Deleted); !reflect.DeepEqual(got, st.delete) {
				t.Errorf("deleted = %v, want %v", got, st.delete)
			}
		})
	}
	// fw2 never polled: its startup sees the end state, and its cursor is
	// its own.
	s = e.stream(k2, true, "")
	if got, want := values(s.New), []string{"Ip:ban:2001:db8::1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("fw2 startup = %v, want %v", got, want)
	}
}

func TestStreamFilters(t *testing.T) {
	e := newEnv(t, 0, Config{})
	k := e.key("b")
	e.add("crowdsecurity/ssh-bf", mitigation.ActionBlock, "ip.src", "192.0.2.1", time.Hour)
	e.add("http-scan", mitigation.ActionBlock, "ip.src.prefix", "198.51.100.0/24", time.Hour)
	e.store.Add(mitigation.Mitigation{Rule: "manual-ban", Action: mitigation.ActionBlock, Origin: "manual",
		Scope: mitigation.Scope{{Name: "ip.src", Value: "192.0.2.2"}}, Expires: e.now.Add(time.Hour)}, e.now)
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"", []string{"Ip:ban:192.0.2.1", "Ip:ban:192.0.2.2", "Range:ban:198.51.100.0/24"}},
		{"&scopes=ip", []string{"Ip:ban:192.0.2.1", "Ip:ban:192.0.2.2"}},
		{"&scopes=Range", []string{"Range:ban:198.51.100.0/24"}},
		{"&scopes=ip,range", []string{"Ip:ban:192.0.2.1", "Ip:ban:192.0.2.2", "Range:ban:198.51.100.0/24"}},
		{"&scopes=country", nil},
		{"&origins=cscli", []string{"Ip:ban:192.0.2.2"}},
		{"&origins=crowdsec,lists", []string{"Ip:ban:192.0.2.1", "Range:ban:198.51.100.0/24"}},
		{"&origins=manual", []string{"Ip:ban:192.0.2.2"}},
		{"&scenarios_containing=ssh,scan", []string{"Ip:ban:192.0.2.1", "Range:ban:198.51.100.0/24"}},
		{"&scenarios_not_containing=ssh", []string{"Ip:ban:192.0.2.2", "Range:ban:198.51.100.0/24"}},
	} {
		t.Run(tc.query, func(t *testing.T) {
			if got := values(e.stream(k, true, tc.query).New); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDefaultScopes(t *testing.T) {
	e := newEnv(t, 0, Config{Scopes: []string{"Ip"}})
	k := e.key("old-fw")
	e.add("r", mitigation.ActionBlock, "ip.src", "192.0.2.1", time.Hour)
	e.add("r", mitigation.ActionBlock, "ip.src.prefix", "198.51.100.0/24", time.Hour)
	if got, want := values(e.stream(k, true, "").New), []string{"Ip:ban:192.0.2.1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("no scopes asked: %v, want %v", got, want)
	}
	if got := values(e.stream(k, true, "&scopes=range").New); len(got) != 1 || got[0] != "Range:ban:198.51.100.0/24" {
		t.Errorf("scopes=range: %v", got)
	}
}

func TestAuth(t *testing.T) {
	e := newEnv(t, 0, Config{})
	for _, tc := range []struct{ name, key, path string }{
		{"missing key", "", "/v1/decisions/stream?startup=true"},
		{"unknown key", "0123456789abcdef", "/v1/decisions/stream?startup=true"},
		{"unknown key query", "nope", "/v1/decisions?ip=192.0.2.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, _ := e.get(tc.key, tc.path); code != 403 {
				t.Errorf("code = %d, want 403", code)
			}
		})
	}
	k := e.key("fw")
	if code, _ := e.get(k, "/v1/decisions/stream?startup=true"); code != 200 {
		t.Fatalf("registered key: %d", code)
	}
	if ok, err := DeleteBouncer(e.keys, "fw"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if code, _ := e.get(k, "/v1/decisions/stream"); code != 403 {
		t.Errorf("deleted key: %d, want 403", code)
	}
	r := httptest.NewRequest("HEAD", "/v1/decisions/stream", nil)
	r.Header.Set("X-Api-Key", k)
	w := httptest.NewRecorder()
	e.srv.ServeHTTP(w, r)
	if w.Code != 405 {
		t.Errorf("HEAD: %d, want 405", w.Code)
	}
	if code, _ := e.get(k, "/v1/nope"); code != 404 {
		t.Errorf("unknown path: %d", code)
	}
	k = e.key("fw")
	if code, _ := e.get(k, "/v1/decisions/stream?startup=maybe"); code != 400 {
		t.Errorf("bad startup: %d", code)
	}
}

func TestQuery(t *testing.T) {
	e := newEnv(t, 0, Config{})
	k := e.key("nginx")
	e.add("r", mitigation.ActionBlock, "ip.src", "192.0.2.7", time.Hour)
	e.add("r", mitigation.ActionBlock, "ip.src.prefix", "198.51.100.0/24", time.Hour)
	e.add("r", mitigation.ActionRateLimit, "ip.src.prefix", "198.51.0.0/16", time.Hour)
	e.add("r", mitigation.ActionBlock, "ip.src.prefix", "2001:db8:1::/48", time.Hour)
	for _, tc := range []struct {
		query string
		code  int
		want  []string // nil: the body is null
	}{
		{"ip=192.0.2.7", 200, []string{"Ip:ban:192.0.2.7"}},
		{"ip=::ffff:192.0.2.7", 200, []string{"Ip:ban:192.0.2.7"}},
		{"ip=192.0.2.8", 200, nil},
		{"ip=198.51.100.9", 200, []string{"Range:ban:198.51.100.0/24", "Range:captcha:198.51.0.0/16"}},
		{"ip=198.51.100.9&type=ban", 200, []string{"Range:ban:198.51.100.0/24"}},
		{"ip=198.51.7.1", 200, []string{"Range:captcha:198.51.0.0/16"}},
		{"ip=2001:db8:1:2::3", 200, []string{"Range:ban:2001:db8:1::/48"}},
		{"ip=2001:db8:2::3", 200, nil},
		{"range=198.51.100.128/25", 200, []string{"Range:ban:198.51.100.0/24", "Range:captcha:198.51.0.0/16"}},
		{"range=198.51.0.0/16&contains=false", 200, []string{"Range:ban:198.51.100.0/24", "Range:captcha:198.51.0.0/16"}},
		{"range=192.0.2.0/24&contains=false", 200, []string{"Ip:ban:192.0.2.7"}},
		{"scope=Ip&value=192.0.2.7", 200, []string{"Ip:ban:192.0.2.7"}},
		{"scope=range&value=198.51.100.0/24", 200, []string{"Range:ban:198.51.100.0/24", "Range:captcha:198.51.0.0/16"}},
		{"scope=country&value=FR", 200, nil},
		{"ip=nope", 400, nil},
		{"range=1.2.3.4", 400, nil},
		{"", 400, nil},
	} {
		t.Run(tc.query, func(t *testing.T) {
			code, body := e.get(k, "/v1/decisions?"+tc.query)
			if code != tc.code {
				t.Fatalf("code = %d (%s), want %d", code, body, tc.code)
			}
			if code != 200 {
				return
			}
			if tc.want == nil {
				if strings.TrimSpace(body) != "null" {
					t.Errorf("body = %s, want null", body)
				}
				return
			}
			var ds []wireDecision
			if err := json.Unmarshal([]byte(body), &ds); err != nil {
				t.Fatal(err)
			}
			if got := values(ds); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestModel drives random adds, deletes, extensions and expiries, and checks
// after each poll that a bouncer applying the answers (deleted, then new)
// holds exactly the strongest active decision of each shown value, also when
// the store's feed and the server's ring are too short and force resyncs.
func TestModel(t *testing.T) {
	for _, tc := range []struct {
		name        string
		storeHist   int
		serverHist  int
		opsPerPoll  int
		wantResyncs bool
	}{
		{"incremental", 0, 0, 5, false},
		{"store feed overflows", 8, 0, 20, true},
		{"server ring overflows", 0, 8, 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.storeHist, Config{History: tc.serverHist})
			k := e.key("fw")
			rng := rand.New(rand.NewPCG(1, 2))
			held := map[string]wireDecision{}
			apply := func(s wireStream) {
				for _, d := range s.Deleted {
					if h, ok := held[d.Value]; !ok || h.ID != d.ID || h.Type != d.Type {
						t.Fatalf("deleted %+v, held %+v", d, h)
					}
					delete(held, d.Value)
				}
				for _, d := range s.New {
					if _, ok := held[d.Value]; ok {
						t.Fatalf("new %+v over a held value", d)
					}
					held[d.Value] = d
				}
			}
			apply(e.stream(k, true, ""))
			maxHeld := 0
			actions := []mitigation.Action{mitigation.ActionBlock, mitigation.ActionRateLimit, mitigation.ActionLog, mitigation.ActionFirewall}
			for poll := range 200 {
				for range rng.IntN(tc.opsPerPoll + 1) {
					switch op := rng.IntN(10); {
					case op < 6:
						v := fmt.Sprintf("192.0.2.%d", rng.IntN(12))
						name := "ip.src"
						if rng.IntN(4) == 0 {
							v, name = fmt.Sprintf("198.51.%d.0/24", rng.IntN(4)), "ip.src.prefix"
						}
						e.add(fmt.Sprintf("r%d", rng.IntN(3)), actions[rng.IntN(len(actions))], name, v, time.Duration(1+rng.IntN(30))*time.Second)
					case op < 8:
						if l := e.store.List(e.now); len(l) > 0 {
							e.store.Delete(l[rng.IntN(len(l))].ID)
						}
					default:
						e.now = e.now.Add(time.Duration(rng.IntN(5)) * time.Second)
						e.store.Expire(e.now)
					}
				}
				apply(e.stream(k, false, ""))
				want := map[string]string{}
				rank := map[string]int{"captcha": 1, "ban": 2}
				exp := map[string]time.Time{}
				for _, m := range e.store.List(e.now) {
					d, ok := e.srv.toDecision(&m)
					if !ok {
						continue
					}
					typ := typeNames[d.typ]
					if w, ok := want[d.value]; !ok || rank[typ] > rank[w] || rank[typ] == rank[w] && d.expires.After(exp[d.value]) {
						want[d.value], exp[d.value] = typ, d.expires
					}
				}
				got := map[string]string{}
				for v, d := range held {
					got[v] = d.Type
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("poll %d: bouncer holds %v, want %v", poll, got, want)
				}
				maxHeld = max(maxHeld, len(held))
			}
			if maxHeld < 5 {
				t.Errorf("bouncer never held more than %d values: the test exercises little", maxHeld)
			}
			if n := testutil.ToFloat64(e.srv.metrics.resyncs); (n > 0) != tc.wantResyncs {
				t.Errorf("resyncs = %v, want some: %v", n, tc.wantResyncs)
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	st, _ := mitigation.New(mitigation.Config{}, nil, nil)
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no key file", Config{}, "key_file"},
		{"bad action", Config{KeyFile: "k", Types: map[string]string{"ban": "ban"}}, "unknown action"},
		{"bad type", Config{KeyFile: "k", Types: map[string]string{"block": "throttle"}}, "'captcha'"},
		{"negative", Config{KeyFile: "k", History: -1}, "history"},
		{"bad scope", Config{KeyFile: "k", Scopes: []string{"country"}}, "'range'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.cfg, st, nil, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	s, err := New(Config{KeyFile: "k", Types: map[string]string{"shadowban": "ban", "rate_limit": ""}}, st, nil, nil)
	if err != nil || s.types[mitigation.ActionShadowBan] != typeBan || s.types[mitigation.ActionRateLimit] != typeNone {
		t.Errorf("custom types: %v %v", err, s.types)
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, in := range []string{"", "plain", `q"uote\`, "ctl\x00\x1f\x7f", "é✓", "bad\xff", "<&>"} {
		var got string
		if err := json.Unmarshal(appendJSONString(nil, in), &got); err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if want := strings.ToValidUTF8(in, "\uFFFD"); got != want {
			t.Errorf("%q: round trip %q", in, got)
		}
	}
}

func FuzzServe(f *testing.F) {
	for _, q := range []string{"/v1/decisions?ip=192.0.2.1", "/v1/decisions?range=198.51.0.0/16&contains=false", "/v1/decisions/stream?startup=true&scopes=ip,range&origins=x",
		"/v1/decisions?scope=Range&value=::/0", "/v1/decisions/stream?scenarios_containing=a,,b&scenarios_not_containing=%00"} {
		f.Add(q)
	}
	e := newEnv(f, 0, Config{})
	k := e.key("f")
	e.add("r", mitigation.ActionBlock, "ip.src.prefix", "198.51.100.0/24", time.Hour)
	e.add("r", mitigation.ActionBlock, "ip.src", "2001:db8::7", time.Hour)
	f.Fuzz(func(t *testing.T, target string) {
		if len(target) > 4096 {
			return
		}
		u, err := http.NewRequest("GET", "http://x/", nil)
		if err != nil {
			return
		}
		if err := func() error { var err error; u.URL, err = u.URL.Parse(target); return err }(); err != nil {
			return
		}
		u.Header.Set("X-Api-Key", k)
		w := httptest.NewRecorder()
		e.srv.ServeHTTP(w, u)
		switch w.Code {
		case 200:
			var v any
			if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
				t.Fatalf("%s: invalid JSON %q", target, w.Body.String())
			}
		case 400, 404, 405:
		default:
			t.Fatalf("%s: code %d", target, w.Code)
		}
	})
}

func TestAppendDuration(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ds := []time.Duration{0, 1, -1, time.Second, -time.Second, time.Minute, time.Hour, 3*time.Hour + 54*time.Minute + 46438767027, 1<<63 - 1, -1 << 63, 999 * time.Millisecond, 61 * time.Second}
	for range 10000 {
		ds = append(ds, time.Duration(rng.Int64N(1<<50)-1<<49))
	}
	for _, d := range ds {
		if got := string(appendDuration(nil, d)); got != d.String() {
			t.Fatalf("appendDuration(%d) = %q, want %q", int64(d), got, d.String())
		}
	}
	if n := testing.AllocsPerRun(100, func() { appendDuration(make([]byte, 0, 64)[:0], time.Hour+time.Nanosecond) }); n > 1 {
		t.Errorf("allocs = %v", n)
	}
}

package mitigation

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
)

func TestScopeKey(t *testing.T) {
	a := Scope{{"ip.src", "203.0.113.7"}}
	b := Scope{{"ip.src", "203.0.113.7"}}
	if a.Key() != b.Key() {
		t.Fatal("equal scopes, different keys")
	}
	// The key is part of what other processes may compute: keep it stable.
	if got, want := a.Key(), uint64(0xa774fb30f42a0e43); got != want {
		t.Errorf("Key(%s) = %#x, want %#x (the canonical encoding changed)", a, got, want)
	}
	// Reference: one-shot xxhash of the documented encoding.
	if got, want := a.Key(), xxhash.Sum64([]byte("\x06ip.src\x0b203.0.113.7")); got != want {
		t.Errorf("Key(%s) = %#x, want xxhash64(canonical bytes) = %#x", a, got, want)
	}
	long := strings.Repeat("v", 300) // a two-byte uvarint length
	if got, want := (Scope{{"http.path", long}}).Key(), xxhash.Sum64([]byte("\x09http.path\xac\x02"+long)); got != want {
		t.Errorf("Key(long value) = %#x, want %#x", got, want)
	}
	for _, tc := range []struct {
		name string
		x, y Scope
	}{
		{"value", Scope{{"ip.src", "203.0.113.7"}}, Scope{{"ip.src", "203.0.113.8"}}},
		{"name", Scope{{"ip.src", "x"}}, Scope{{"tls.ja4", "x"}}},
		{"order", Scope{{"http.path", "/a"}, {"http.method", "GET"}}, Scope{{"http.method", "GET"}, {"http.path", "/a"}}},
		// Length prefixes keep boundaries: without them these would hash alike.
		{"boundary", Scope{{"http.path", "/ab"}, {"http.query", "c"}}, Scope{{"http.path", "/a"}, {"http.query", "bc"}}},
		{"pair split", Scope{{"http.path", "a"}}, Scope{{"http.pat", "ha"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.x.Key() == tc.y.Key() {
				t.Errorf("%s and %s have the same key", tc.x, tc.y)
			}
		})
	}
}

func TestHasherMatchesKey(t *testing.T) {
	s := Scope{{`http.cookies["session"]`, "abc"}, {"http.path", "/login"}}
	var h Hasher
	h.Reset()
	h.Write(s[0].Name, []byte(s[0].Value))
	h.WriteString(s[1].Name, s[1].Value)
	if h.Sum64() != s.Key() {
		t.Fatal("Hasher and Scope.Key disagree")
	}
	val := []byte("203.0.113.7")
	if n := testing.AllocsPerRun(100, func() {
		var h Hasher
		h.Reset()
		h.Write("ip.src", val)
		_ = h.Sum64()
		_ = s.Key()
	}); n != 0 {
		t.Errorf("Hasher and Key allocate %v times", n)
	}
}

func TestScopeString(t *testing.T) {
	for _, tc := range []struct {
		s    Scope
		want string
	}{
		{Scope{{"ip.src", "203.0.113.7"}}, `ip.src=203.0.113.7`},
		{Scope{{`http.cookies["session"]`, "abc"}, {"http.path", "/login"}}, `http.cookies["session"]=abc http.path=/login`},
		{Scope{{"http.user_agent", "curl/8 x"}}, `http.user_agent="curl/8 x"`},
		{Scope{{"http.query", "a=b"}}, `http.query="a=b"`},
		{Scope{{"http.path", "\x00"}}, `http.path="\x00"`},
		{Scope{{"http.path", ""}}, `http.path=""`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if got := tc.s.String(); got != tc.want {
				t.Errorf("String() = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestCanonical(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      Scope
		want    Scope
		wantErr string
	}{
		{"ipv4", Scope{{"ip.src", "203.0.113.7"}}, Scope{{"ip.src", "203.0.113.7"}}, ""},
		{"ipv4-mapped", Scope{{"ip.src", "::ffff:203.0.113.7"}}, Scope{{"ip.src", "203.0.113.7"}}, ""},
		{"ipv6 long form", Scope{{"ip.src", "2001:0db8:0000::0001"}}, Scope{{"ip.src", "2001:db8::1"}}, ""},
		{"zone dropped", Scope{{"ip.src", "fe80::1%eth0"}}, Scope{{"ip.src", "fe80::1"}}, ""},
		{"prefix masked", Scope{{"ip.src.prefix", "2001:db8::1/64"}}, Scope{{"ip.src.prefix", "2001:db8::/64"}}, ""},
		{"mapped prefix", Scope{{"ip.src.prefix", "::ffff:198.51.100.0/120"}}, Scope{{"ip.src.prefix", "198.51.100.0/24"}}, ""},
		{"rego spelling", Scope{{"ip.asnum", "64496"}}, Scope{{"ip.src.asnum", "64496"}}, ""},
		{"number", Scope{{"http.status", "401.0"}}, Scope{{"http.status", "401"}}, ""},
		{"header lower-cased", Scope{{`http.headers["X-Api-Key"]`, "K"}}, Scope{{`http.headers["x-api-key"]`, "K"}}, ""},
		{"ja4 and path", Scope{{"tls.ja4", "t13d1516h2_8daaf6152771_02713d6af862"}, {"http.path", "/login"}},
			Scope{{"tls.ja4", "t13d1516h2_8daaf6152771_02713d6af862"}, {"http.path", "/login"}}, ""},
		{"empty", Scope{}, nil, "empty scope"},
		{"unknown name", Scope{{"ip.dst", "x"}}, nil, "ip.dst"},
		{"bad address", Scope{{"ip.src", "203.0.113"}}, nil, "ip.src"},
		{"bad prefix", Scope{{"ip.src.prefix", "203.0.113.0"}}, nil, "ip.src.prefix"},
		{"bad number", Scope{{"http.status", "x"}}, nil, "not a number"},
		{"empty value", Scope{{"http.cookies[\"s\"]", ""}}, nil, "empty value"},
		{"duplicate", Scope{{"ip.src", "192.0.2.1"}, {"ip.src", "192.0.2.2"}}, nil, "duplicate"},
		{"duplicate after canonical", Scope{{"ip.src.asnum", "1"}, {"ip.asnum", "1"}}, nil, "duplicate"},
		{"long value", Scope{{"http.path", strings.Repeat("a", MaxValueLen+1)}}, nil, "more than"},
		{"too many pairs", make(Scope, MaxScopePairs+1), nil, "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Canonical(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Canonical(%s) error = %v, want %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Canonical(%s): %v", tc.in, err)
			}
			if !got.Equal(tc.want) {
				t.Errorf("Canonical(%s) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestScopeJSON(t *testing.T) {
	s := Scope{{`http.cookies["session"]`, "a\"b"}, {"http.path", "/login"}, {"ip.src", "203.0.113.7"}}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"http.cookies[\"session\"]":"a\"b","http.path":"/login","ip.src":"203.0.113.7"}`; string(b) != want {
		t.Errorf("Marshal = %s, want %s", b, want)
	}
	var back Scope
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.Equal(s) {
		t.Errorf("round trip = %s, want %s", back, s)
	}
	for _, bad := range []string{`[]`, `{"a":1}`, `{"a":"x","a":"y"}`, `{"a":"x"`, `"x"`} {
		t.Run(bad, func(t *testing.T) {
			var s Scope
			if err := json.Unmarshal([]byte(bad), &s); err == nil {
				t.Errorf("Unmarshal(%s) = %v, want error", bad, s)
			}
		})
	}
}

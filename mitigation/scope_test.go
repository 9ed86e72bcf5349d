package mitigation

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
)

func TestScopeKey(t *testing.T) {
	a := Scope{{Name: "ip.src", Value: "203.0.113.7"}}
	b := Scope{{Name: "ip.src", Value: "203.0.113.7"}}
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
	if got, want := (Scope{{Name: "http.path", Value: long}}).Key(), xxhash.Sum64([]byte("\x09http.path\xac\x02"+long)); got != want {
		t.Errorf("Key(long value) = %#x, want %#x", got, want)
	}
	for _, tc := range []struct {
		name string
		x, y Scope
	}{
		{"value", Scope{{Name: "ip.src", Value: "203.0.113.7"}}, Scope{{Name: "ip.src", Value: "203.0.113.8"}}},
		{"name", Scope{{Name: "ip.src", Value: "x"}}, Scope{{Name: "tls.ja4", Value: "x"}}},
		{"order", Scope{{Name: "http.path", Value: "/a"}, {Name: "http.method", Value: "GET"}}, Scope{{Name: "http.method", Value: "GET"}, {Name: "http.path", Value: "/a"}}},
		// Length prefixes keep boundaries: without them these would hash alike.
		{"boundary", Scope{{Name: "http.path", Value: "/ab"}, {Name: "http.query", Value: "c"}}, Scope{{Name: "http.path", Value: "/a"}, {Name: "http.query", Value: "bc"}}},
		{"pair split", Scope{{Name: "http.path", Value: "a"}}, Scope{{Name: "http.pat", Value: "ha"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.x.Key() == tc.y.Key() {
				t.Errorf("%s and %s have the same key", tc.x, tc.y)
			}
		})
	}
}

func TestHasherMatchesKey(t *testing.T) {
	s := Scope{{Name: `http.cookies["session"]`, Value: "abc"}, {Name: "http.path", Value: "/login"}}
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
		{Scope{{Name: "ip.src", Value: "203.0.113.7"}}, `ip.src=203.0.113.7`},
		{Scope{{Name: `http.cookies["session"]`, Value: "abc"}, {Name: "http.path", Value: "/login"}}, `http.cookies["session"]=abc http.path=/login`},
		{Scope{{Name: "http.user_agent", Value: "curl/8 x"}}, `http.user_agent="curl/8 x"`},
		{Scope{{Name: "http.query", Value: "a=b"}}, `http.query="a=b"`},
		{Scope{{Name: "http.path", Value: "\x00"}}, `http.path="\x00"`},
		{Scope{{Name: "http.path", Value: ""}}, `http.path=""`},
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
		{"ipv4", Scope{{Name: "ip.src", Value: "203.0.113.7"}}, Scope{{Name: "ip.src", Value: "203.0.113.7"}}, ""},
		{"ipv4-mapped", Scope{{Name: "ip.src", Value: "::ffff:203.0.113.7"}}, Scope{{Name: "ip.src", Value: "203.0.113.7"}}, ""},
		{"ipv6 long form", Scope{{Name: "ip.src", Value: "2001:0db8:0000::0001"}}, Scope{{Name: "ip.src", Value: "2001:db8::1"}}, ""},
		{"zone dropped", Scope{{Name: "ip.src", Value: "fe80::1%eth0"}}, Scope{{Name: "ip.src", Value: "fe80::1"}}, ""},
		{"prefix masked", Scope{{Name: "ip.src.prefix", Value: "2001:db8::1/64"}}, Scope{{Name: "ip.src.prefix", Value: "2001:db8::/64"}}, ""},
		{"mapped prefix", Scope{{Name: "ip.src.prefix", Value: "::ffff:198.51.100.0/120"}}, Scope{{Name: "ip.src.prefix", Value: "198.51.100.0/24"}}, ""},
		{"rego spelling", Scope{{Name: "ip.asnum", Value: "64496"}}, Scope{{Name: "ip.src.asnum", Value: "64496"}}, ""},
		{"number", Scope{{Name: "http.status", Value: "401.0"}}, Scope{{Name: "http.status", Value: "401"}}, ""},
		{"header lower-cased", Scope{{Name: `http.headers["X-Api-Key"]`, Value: "K"}}, Scope{{Name: `http.headers["x-api-key"]`, Value: "K"}}, ""},
		{"ja4 and path", Scope{{Name: "tls.ja4", Value: "t13d1516h2_8daaf6152771_02713d6af862"}, {Name: "http.path", Value: "/login"}},
			Scope{{Name: "tls.ja4", Value: "t13d1516h2_8daaf6152771_02713d6af862"}, {Name: "http.path", Value: "/login"}}, ""},
		{"empty", Scope{}, nil, "empty scope"},
		{"unknown name", Scope{{Name: "ip.dst", Value: "x"}}, nil, "ip.dst"},
		{"bad address", Scope{{Name: "ip.src", Value: "203.0.113"}}, nil, "ip.src"},
		{"bad prefix", Scope{{Name: "ip.src.prefix", Value: "203.0.113.0"}}, nil, "ip.src.prefix"},
		{"bad number", Scope{{Name: "http.status", Value: "x"}}, nil, "not a number"},
		{"empty value", Scope{{Name: "http.cookies[\"s\"]", Value: ""}}, nil, "empty value"},
		{"duplicate", Scope{{Name: "ip.src", Value: "192.0.2.1"}, {Name: "ip.src", Value: "192.0.2.2"}}, nil, "duplicate"},
		{"duplicate after canonical", Scope{{Name: "ip.src.asnum", Value: "1"}, {Name: "ip.asnum", Value: "1"}}, nil, "duplicate"},
		{"long value", Scope{{Name: "http.path", Value: strings.Repeat("a", MaxValueLen+1)}}, nil, "more than"},
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
	s := Scope{{Name: `http.cookies["session"]`, Value: "a\"b"}, {Name: "http.path", Value: "/login"}, {Name: "ip.src", Value: "203.0.113.7"}}
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

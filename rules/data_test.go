package rules

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/guardd/guardd/characteristics"
	"github.com/guardd/guardd/rules/builtin"
)

// loadLogin loads the built-in login rules with loginPaths, natively and
// through OPA.
func loadLogin(t *testing.T, loginPaths []string) (native, opa *Set) {
	t.Helper()
	fsys := fstest.MapFS{}
	for _, name := range []string{"login_bruteforce.rego", "credential_stuffing_cookie.rego", "credential_stuffing_ja4.rego"} {
		data, err := fs.ReadFile(builtin.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		fsys[name] = &fstest.MapFile{Data: data}
	}
	native, err := Load(fsys, Options{LoginPaths: loginPaths, EvalTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range native.Rules() {
		if !r.Native {
			t.Fatalf("%s is not native with login_paths %q: %v", r.Name, loginPaths, r.Fallback)
		}
	}
	opa, err = Load(fsys, Options{LoginPaths: loginPaths, DisableNative: true, EvalTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return native, opa
}

// TestLoginPaths checks that the configured login paths reach the rules as
// constants: a custom path trips brute force, the default still covers
// WordPress and basic auth, and native and OPA agree.
func TestLoginPaths(t *testing.T) {
	custom := []string{"/account/enter", "/members/*", "*/Portal/Auth"}
	type req struct {
		method, path string
		status       int
		user         string
	}
	tests := []struct {
		name  string
		paths []string
		req   req
		want  bool
	}{
		{"default wp-login 200", nil, req{"POST", "/wp-login.php", 200, ""}, true},
		{"default xmlrpc 200", nil, req{"POST", "/blog/xmlrpc.php", 200, ""}, true},
		{"default basic auth", nil, req{"GET", "/private/", 401, "alice"}, true},
		{"default login 401", nil, req{"POST", "/login", 401, ""}, true},
		{"default json api 200", nil, req{"POST", "/api/v1/login", 200, ""}, false},
		{"default custom path", nil, req{"POST", "/account/enter", 200, ""}, false},
		{"custom exact form again", custom, req{"POST", "/account/enter", 200, ""}, true},
		{"custom exact case", custom, req{"POST", "/Account/Enter", 401, ""}, true},
		{"custom exact success", custom, req{"POST", "/account/enter", 302, ""}, false},
		{"custom prefix", custom, req{"POST", "/members/login-form", 401, ""}, true},
		{"custom suffix", custom, req{"POST", "/shop/portal/auth", 200, ""}, true},
		{"custom replaces default", custom, req{"POST", "/wp-login.php", 200, ""}, false},
		{"custom keeps basic auth", custom, req{"GET", "/private/", 401, "alice"}, true},
		{"custom other path", custom, req{"POST", "/account/enter/x", 401, ""}, false},
	}
	sets := map[string][2]*Set{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			key := strings.Join(tc.paths, ",")
			s, ok := sets[key]
			if !ok {
				n, o := loadLogin(t, tc.paths)
				s = [2]*Set{n, o}
				sets[key] = s
			}
			e := characteristics.Event{Method: tc.req.method, Path: tc.req.path, Status: tc.req.status}
			if tc.req.user != "" {
				e.Vars = []characteristics.Field{{Name: "remote_user", Value: tc.req.user}}
			}
			for i, set := range s {
				idx := -1
				for j, r := range set.Rules() {
					if r.Name == "login_bruteforce" {
						idx = j
					}
				}
				var m Matches
				set.Eval(&e, &m)
				if got := m.Count(idx); got != tc.want {
					t.Errorf("%s %s %d (native=%v): count = %v, want %v", tc.req.method, tc.req.path, tc.req.status, i == 0, got, tc.want)
				}
			}
		})
	}
	for _, s := range sets {
		differential(t, s[0], s[1], 2000, 7)
	}
}

func TestLoginPathsBad(t *testing.T) {
	for _, p := range []string{"", "login", "*", "*/a*", "/a*b", "/a b", "/login?x=1"} {
		if err := CheckLoginPath(p); err == nil {
			t.Errorf("CheckLoginPath(%q) = nil, want an error", p)
		}
		if _, err := Load(fstest.MapFS{}, Options{LoginPaths: []string{"/ok", p}}); err == nil || !strings.Contains(err.Error(), "login_paths[1]") {
			t.Errorf("Load with %q: err = %v, want login_paths[1]", p, err)
		}
	}
	for _, p := range []string{"/login", "/members/*", "*/login", "/"} {
		if err := CheckLoginPath(p); err != nil {
			t.Errorf("CheckLoginPath(%q) = %v", p, err)
		}
	}
}

package rules

import (
	"fmt"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// DefaultLoginPaths are the login endpoints the built-in rules know when
// the configuration names none (rules.login_paths): exact paths, and ends
// of login form paths ("*/login") wherever the application is mounted.
var DefaultLoginPaths = []string{
	"/login", "/signin", "/sign-in", "/logon", "/auth", "/session", "/sessions",
	"/user/login", "/users/sign_in", "/account/login", "/accounts/login",
	"/api/login", "/api/auth/login", "/api/v1/login", "/oauth/token",
	"/wp-login.php", "/xmlrpc.php", "/administrator/index.php",
	"*/login", "*/signin", "*/sign-in", "*/logon", "*/login.php", "*/user/login",
	"*/account/login", "*/admin/login", "*/users/sign_in", "*/wp-login.php",
	"*/xmlrpc.php", "*/session", "*/sessions",
}

// dataPackage is the Rego package the configuration is given to rules in:
// data.guardd.config.
const dataPackage = "guardd.config"

// CheckLoginPath validates one rules.login_paths entry: "/exact/path", a
// prefix "/prefix/*" or an end "*/end". Matching is case-insensitive.
func CheckLoginPath(p string) error {
	body := strings.TrimSuffix(strings.TrimPrefix(p, "*"), "*")
	switch {
	case p == "":
		return fmt.Errorf("empty path; want /path, /prefix/* or */end")
	case strings.HasPrefix(p, "*") && strings.HasSuffix(p, "*") && len(p) > 1:
		return fmt.Errorf("%q: a * at both ends is not supported; want /path, /prefix/* or */end", p)
	case !strings.HasPrefix(body, "/"):
		return fmt.Errorf("%q: want /path, /prefix/* or */end (a path starts with /)", p)
	case strings.Contains(body, "*"):
		return fmt.Errorf("%q: * only as the first or last character; want /path, /prefix/* or */end", p)
	case strings.ContainsAny(body, " \t?#"):
		return fmt.Errorf("%q: a path has no space, query (?) or fragment (#)", p)
	}
	return nil
}

// CheckParanoia reports whether p is a paranoia level: 1 to 4, or 0 for
// the default, 1.
func CheckParanoia(p int) error {
	if p < 0 || p > 4 {
		return fmt.Errorf("paranoia %d: want 1 (the default: what no site's visitors send), 2, 3 or 4 (more signature classes, more false positives)", p)
	}
	return nil
}

// dataModule is the module `package guardd.config` that gives rules the
// configured values as constants, so that partial evaluation folds them into
// the native predicates:
//
//	data.guardd.config.login_paths     exact paths (lower case)
//	data.guardd.config.login_prefixes  prefixes ("/prefix/*" less the *)
//	data.guardd.config.login_suffixes  ends ("*/end" less the *)
//	data.guardd.config.paranoia        1 to 4 (CheckParanoia)
//
// login is validated with CheckLoginPath; nil or empty is DefaultLoginPaths.
func dataModule(login []string, paranoia int) (*ast.Module, error) {
	if len(login) == 0 {
		login = DefaultLoginPaths
	}
	if err := CheckParanoia(paranoia); err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	exact, prefixes, suffixes := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i, p := range login {
		if err := CheckLoginPath(p); err != nil {
			return nil, fmt.Errorf("rules: login_paths[%d]: %w", i, err)
		}
		p = strings.ToLower(p)
		switch {
		case strings.HasPrefix(p, "*"):
			suffixes[p[1:]] = true
		case strings.HasSuffix(p, "*"):
			prefixes[p[:len(p)-1]] = true
		default:
			exact[p] = true
		}
	}
	var b strings.Builder
	b.WriteString("package " + dataPackage + "\n\n")
	for _, s := range []struct {
		name string
		set  map[string]bool
	}{{"login_paths", exact}, {"login_prefixes", prefixes}, {"login_suffixes", suffixes}} {
		keys := make([]string, 0, len(s.set))
		for k := range s.set {
			keys = append(keys, ast.StringTerm(k).String())
		}
		sort.Strings(keys)
		if len(keys) == 0 {
			fmt.Fprintf(&b, "%s := set()\n", s.name)
			continue
		}
		fmt.Fprintf(&b, "%s := {%s}\n", s.name, strings.Join(keys, ", "))
	}
	fmt.Fprintf(&b, "paranoia := %d\n", max(paranoia, 1))
	return ast.ParseModuleWithOpts("guardd.config", b.String(), ast.ParserOptions{RegoVersion: ast.RegoV1})
}

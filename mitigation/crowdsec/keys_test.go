package crowdsec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", KeyFileName)
	if l, err := ListBouncers(path); err != nil || len(l) != 0 {
		t.Fatalf("missing file: %v %v", l, err)
	}
	k1, err := AddBouncer(path, "fw-1", t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(k1) != 64 {
		t.Errorf("key %q: want 64 hex digits", k1)
	}
	k2, err := AddBouncer(path, "nginx@edge", t0)
	if err != nil || k2 == k1 {
		t.Fatal(k2, err)
	}
	for _, tc := range []struct{ name, want string }{
		{"fw-1", "already registered"},
		{"", "bouncer name"},
		{"-x", "bouncer name"},
		{"a b", "bouncer name"},
		{strings.Repeat("a", 65), "bouncer name"},
	} {
		t.Run("refuse "+tc.name, func(t *testing.T) {
			if _, err := AddBouncer(path, tc.name, t0); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := AddBouncer(path, "fw-1", t0); !errors.Is(err, ErrExists) {
		t.Errorf("duplicate: %v, want ErrExists", err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v, want 0600", fi.Mode(), err)
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), k1) || strings.Contains(string(data), k2) {
		t.Error("key file holds a key in clear")
	}
	l, err := ListBouncers(path)
	if err != nil || len(l) != 2 || l[0].Name != "fw-1" || l[1].Name != "nginx@edge" || l[0].SHA256 != hashKey(k1) {
		t.Fatalf("list = %+v %v", l, err)
	}
	if ok, err := DeleteBouncer(path, "fw-1"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := DeleteBouncer(path, "fw-1"); ok || err != nil {
		t.Fatal("second delete:", ok, err)
	}
	if l, _ := ListBouncers(path); len(l) != 1 {
		t.Errorf("after delete: %+v", l)
	}
}

func TestKeyFileDamage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, body, want string }{
		{"not json", "{", "unexpected EOF"},
		{"unknown field", `{"bouncers":[],"x":1}`, "unknown field"},
		{"bad hash", `{"bouncers":[{"name":"a","sha256":"00"}]}`, "64 hex"},
		{"bad name", `{"bouncers":[{"name":"a b","sha256":"` + strings.Repeat("0", 64) + `"}]}`, "invalid name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name)
			os.WriteFile(p, []byte(tc.body), 0o600)
			if _, err := ListBouncers(p); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) && tc.name != "not json" {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// A damaged key file keeps the keys loaded before.
func TestKeyReloadKeepsOldOnError(t *testing.T) {
	e := newEnv(t, 0, Config{})
	k := e.key("fw")
	if code, _ := e.get(k, "/v1/decisions/stream?startup=true"); code != 200 {
		t.Fatal(code)
	}
	os.WriteFile(e.keys, []byte("{broken"), 0o600)
	if code, _ := e.get(k, "/v1/decisions/stream"); code != 200 {
		t.Errorf("after damage: %d, want the old keys to hold", code)
	}
}

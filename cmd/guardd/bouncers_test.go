package main

import (
	"bytes"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/guardd/guardd/mitigation"
	"github.com/guardd/guardd/mitigation/crowdsec"
)

func TestBouncersCommand(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	cfg := filepath.Join(dir, "guardd.yaml")
	os.WriteFile(cfg, []byte("mitigation:\n  state_dir: "+state+"\n"), 0o600)
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := dispatch(append([]string{"bouncers"}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	code, key, _ := run("add", "--config", cfg, "fw-1")
	key = strings.TrimSpace(key)
	if code != 0 || len(key) != 64 {
		t.Fatalf("add: %d %q", code, key)
	}
	if code, _, _ := run("add", "nginx", "--config", cfg); code != 0 {
		t.Fatalf("add with flags after NAME: %d", code)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"duplicate", []string{"add", "--config", cfg, "fw-1"}, 1, "", "already registered"},
		{"bad name", []string{"add", "--config", cfg, "a b"}, 1, "", "bouncer name"},
		{"list", []string{"list", "--config", cfg}, 0, "fw-1", ""},
		{"delete unknown", []string{"delete", "--config", cfg, "nope"}, 1, "", "no bouncer named"},
		{"no name", []string{"add", "--config", cfg}, 2, "", "usage"},
		{"no verb", nil, 2, "", "usage"},
		{"bad config", []string{"list", "--config", filepath.Join(dir, "missing.yaml")}, 1, "", "config"},
		{"help", []string{"-h"}, 0, "usage", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(tc.args...)
			if code != tc.code || !strings.Contains(out, tc.stdout) || !strings.Contains(errs, tc.stderr) {
				t.Errorf("code %d stdout %q stderr %q; want %d, %q, %q", code, out, errs, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
	keyFile := filepath.Join(state, crowdsec.KeyFileName)
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	// The key the command printed opens the API of a server on that file.
	st, _ := mitigation.New(mitigation.Config{}, nil, nil)
	srv, err := crowdsec.New(crowdsec.Config{KeyFile: keyFile}, st, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	get := func() int {
		r := httptest.NewRequest("GET", "/v1/decisions/stream?startup=true", nil)
		r.Header.Set("X-Api-Key", key)
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		return w.Code
	}
	if c := get(); c != 200 {
		t.Errorf("printed key: %d, want 200", c)
	}
	if code, _, _ := run("delete", "--config", cfg, "fw-1"); code != 0 {
		t.Fatalf("delete: %d", code)
	}
	if c := get(); c != 403 {
		t.Errorf("deleted key: %d, want 403", c)
	}
	if _, out, _ := run("list", "--key-file", keyFile); strings.Contains(out, "fw-1") || !strings.Contains(out, "nginx") {
		t.Errorf("list after delete: %q", out)
	}
}

// TestBouncersAddAsRootKeepsOwner: `sudo guardd bouncers add` leaves the key
// file to the owner of the state directory (the guardd user), who runs the
// daemon that reads it.
func TestBouncersAddAsRootKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to write as root and chown")
	}
	dir := t.TempDir()
	if err := os.Chown(dir, 4242, 4343); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "crowdsec-bouncers.json")
	var out, errb bytes.Buffer
	if rc := runBouncers([]string{"add", "--key-file", path, "fw-edge1"}, &out, &errb); rc != 0 {
		t.Fatalf("bouncers add: %d %s", rc, errb.String())
	}
	for _, p := range []string{path, path + ".lock"} {
		st, err := os.Stat(p)
		if err != nil {
			continue // no lock file is fine
		}
		if sys := st.Sys().(*syscall.Stat_t); sys.Uid != 4242 || sys.Gid != 4343 {
			t.Errorf("%s is owned by %d:%d, want the directory's 4242:4343", p, sys.Uid, sys.Gid)
		}
	}
}

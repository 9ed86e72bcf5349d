package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeys: guardd keys show and rotate on a key file, as an operator runs
// them: show never makes a file, rotate keeps the signing key second, and a
// file others can read is refused with the chmod that fixes it.
func TestKeys(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "challenge.key")
	keys := func(verb string) (keysJSON, string, int) {
		t.Helper()
		var out, errb bytes.Buffer
		rc := dispatch([]string{"keys", verb, "--json", "--key-file", path}, &out, &errb)
		var res keysJSON
		if rc == 0 {
			if err := json.Unmarshal(out.Bytes(), &res); err != nil {
				t.Fatalf("keys %s --json: %v: %q", verb, err, out.String())
			}
		}
		return res, errb.String(), rc
	}
	if _, stderr, rc := keys("show"); rc != 1 || !strings.Contains(stderr, path) {
		t.Fatalf("show without a file: exit %d, %q; want 1 naming the file", rc, stderr)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("show made the key file")
	}
	first, _, rc := keys("rotate")
	if rc != 0 || len(first.Keys) != 1 || first.Signing != first.Keys[0] {
		t.Fatalf("rotate without a file: exit %d, %+v; want one key", rc, first)
	}
	second, _, rc := keys("rotate")
	if rc != 0 || len(second.Keys) != 2 || second.Keys[1] != first.Signing || second.Signing == first.Signing {
		t.Fatalf("rotate: exit %d, %+v; want a new key first and %s second", rc, second, first.Signing)
	}
	third, _, _ := keys("rotate")
	if len(third.Keys) != 2 || third.Keys[1] != second.Signing {
		t.Fatalf("second rotation: %+v; want %s kept and %s dropped", third, second.Signing, first.Signing)
	}
	if shown, _, rc := keys("show"); rc != 0 || strings.Join(shown.Keys, ",") != strings.Join(third.Keys, ",") {
		t.Fatalf("show: exit %d, %+v; want %+v", rc, shown, third)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode: %v %v; want 0600", st.Mode(), err)
	}
	os.Chmod(path, 0o644)
	if _, stderr, rc := keys("rotate"); rc != 1 || !strings.Contains(stderr, "chmod 600") {
		t.Fatalf("rotate of a readable file: exit %d, %q; want refused", rc, stderr)
	}
}

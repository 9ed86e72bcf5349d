package mitigation

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestSnapshotGolden pins the on-disk format: a change here must stay readable
// by the decoder (or bump stateVersion).
func TestSnapshotGolden(t *testing.T) {
	dir := t.TempDir()
	s := mustOpenAt(t, dir, t0)
	mustAdd(t, s, mit("login_bruteforce", ActionBlock, ipScope("203.0.113.7"), 10*time.Minute), t0)
	gone := mustAdd(t, s, mit("scan", ActionLog, ipScope("203.0.113.8"), time.Minute), t0)
	mustAdd(t, s, mit("session_abuse", ActionShadowBan, Scope{{Name: `http.cookies["session"]`, Value: "abc \"q\""}, {Name: "http.path", Value: "/login"}}, time.Hour), t0)
	mustAdd(t, s, Mitigation{Origin: "api", Action: ActionFirewall, Scope: Scope{{Name: "ip.src.prefix", Value: "2001:db8:1::/64"}}, Expires: t0.Add(24 * time.Hour)}, t0)
	mustAdd(t, s, mit("ja4", ActionRateLimit, Scope{{Name: "tls.ja4", Value: "t13d1516h2_8daaf6152771_02713d6af862"}}, 30*time.Minute), t0)
	s.Delete(gone.ID)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, snapshotName))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "snapshot.golden")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("snapshot differs from %s (run with -update if intended):\n got: %s\nwant: %s", golden, got, want)
	}
	// And the golden file loads.
	dir2 := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir2, snapshotName), want, 0o600); err != nil {
		t.Fatal(err)
	}
	if s2 := mustOpenAt(t, dir2, t0); s2.Len() != 4 {
		t.Errorf("golden snapshot loads %d mitigations, want 4", s2.Len())
	}
}

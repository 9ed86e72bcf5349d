//go:build integration

package packaging

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDebianPackage builds the package with scripts/deb.sh, installs it with
// dpkg -i (services kept from starting by policy-rc.d), and checks what it
// installed: the guardd user in group adm, the state directory, the default
// configuration passing `guardd check` as the guardd user, and the unit
// passing `systemd-analyze verify`. It purges the package at the end. As
// root it must run; otherwise it skips.
func TestDebianPackage(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("installing a Debian package needs root")
	}
	for _, tool := range []string{"dpkg", "systemd-analyze", "runuser", "adduser"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing (scripts/test.sh installs it): %v", tool, err)
		}
	}
	if out, err := exec.Command("dpkg-query", "-W", "-f", "${Status}", "guardd").Output(); err == nil && strings.Contains(string(out), "installed") {
		t.Skip("a guardd package is installed on this machine; not replacing it")
	}
	root, _ := filepath.Abs("..")
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "VERSION=0.0.0+test")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
		}
		return out.String()
	}
	os.Remove(filepath.Join(root, "dist", "guardd_0.0.0+test_amd64.deb"))
	run("./scripts/deb.sh")
	debs, _ := filepath.Glob(filepath.Join(root, "dist", "guardd_0.0.0+test_*.deb"))
	if len(debs) != 1 {
		t.Fatalf("scripts/deb.sh made %v", debs)
	}
	if _, err := os.Stat("/usr/sbin/policy-rc.d"); err != nil {
		if err := os.WriteFile("/usr/sbin/policy-rc.d", []byte("#!/bin/sh\nexit 101\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		defer os.Remove("/usr/sbin/policy-rc.d")
	}
	run("dpkg", "-i", debs[0])
	t.Cleanup(func() { exec.Command("dpkg", "--purge", "guardd").Run() })

	if out := run("id", "-nG", "guardd"); !strings.Contains(" "+out, " adm") {
		t.Errorf("guardd user groups %q lack adm (nginx's logs are www-data:adm 0640)", out)
	}
	st, err := os.Stat("/var/lib/guardd")
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("/var/lib/guardd: %v %v", st, err)
	}
	if out := run("stat", "-c", "%U:%G %a", "/var/lib/guardd", "/etc/guardd/guardd.yaml"); out != "guardd:guardd 700\nroot:guardd 640\n" {
		t.Errorf("owners and modes:\n%s", out)
	}
	if out := run("dpkg-query", "--showformat=${Conffiles}", "-W", "guardd"); !strings.Contains(out, "/etc/guardd/guardd.yaml") {
		t.Errorf("guardd.yaml is not a conffile: %q", out)
	}
	out := run("runuser", "-u", "guardd", "--", "/usr/bin/guardd", "check", "--config", "/etc/guardd/guardd.yaml")
	if !strings.Contains(out, "/etc/guardd/guardd.yaml: ok") || !strings.Contains(out, "login_bruteforce") {
		t.Errorf("guardd check of the installed configuration:\n%s", out)
	}
	if out := run("systemd-analyze", "verify", "/lib/systemd/system/guardd.service"); strings.TrimSpace(out) != "" {
		t.Errorf("systemd-analyze verify has something to say:\n%s", out)
	}
	if out := run("systemd-analyze", "security", "--offline=true", "--threshold=30", "/lib/systemd/system/guardd.service"); !strings.Contains(out, "Overall exposure level") {
		t.Errorf("systemd-analyze security:\n%s", out)
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRulesCheck(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		status     int
		stdout     []string // substrings
		stderr     []string
		notInStdio []string
	}{
		{
			name: "builtin",
			args: []string{"check", "--builtin"},
			stdout: []string{"COUNTED", "login_bruteforce", "scanner_ua", "ip.src.asnum", "native", "request", "log", "rules ok", " 0 fallback",
				"40 distinct http.path, 120/1h0m0s", "20 distinct http.path regular (33 events, cv<=0.18)"},
		},
		{
			name:   "good dir with a fallback rule",
			args:   []string{"check", "../../rules/testdata/good"},
			stdout: []string{"slow_upstream", `http.headers["x-api-key"]`, "30 (score http.request_time)", "token_bucket", "fallback header_count", "object.get", "2 rules ok, 1 native, 1 fallback"},
		},
		{
			name:   "builtin and dir merged",
			args:   []string{"check", "--builtin", "../../rules/testdata/good"},
			stdout: []string{"login_bruteforce", "slow_upstream", "header_count", " rules ok, ", " native, 1 fallback"},
		},
		{
			name:   "duplicate rules across sources",
			args:   []string{"check", "../../rules/testdata/good", "../../rules/testdata/good"},
			status: 1,
			stderr: []string{"rule header_count", "is also defined"},
		},
		{
			name:   "missing dir",
			args:   []string{"check", "../../rules/testdata/nonexistent"},
			status: 1,
			stderr: []string{"nonexistent"},
		},
		{name: "no source", args: []string{"check"}, status: 2, stderr: []string{"usage: guardd rules check"}},
		{name: "no verb", args: nil, status: 2, stderr: []string{"usage:"}},
		{name: "unknown verb", args: []string{"lint"}, status: 2, stderr: []string{"usage:"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			got := runRules(tc.args, &stdout, &stderr)
			if got != tc.status {
				t.Errorf("status %d, want %d\nstdout:\n%s\nstderr:\n%s", got, tc.status, stdout.String(), stderr.String())
			}
			for _, s := range tc.stdout {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout.String())
				}
			}
			for _, s := range tc.stderr {
				if !strings.Contains(stderr.String(), s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr.String())
				}
			}
		})
	}
}

// TestRulesCheckBad runs check on each bad rule alone and expects exit 1 and
// its located error, the file named with its directory.
func TestRulesCheckBad(t *testing.T) {
	files, err := filepath.Glob("../../rules/testdata/bad/*.bad.rego")
	if err != nil || len(files) == 0 {
		t.Fatalf("no bad rules: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			line, _, _ := strings.Cut(string(data), "\n")
			want, ok := strings.CutPrefix(line, "# want: ")
			if !ok {
				t.Fatalf("%s: no `# want:` line", f)
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			if got := runRules([]string{"check", dir}, &stdout, &stderr); got != 1 {
				t.Errorf("status %d, want 1", got)
			}
			if !strings.Contains(stderr.String(), filepath.Join(dir, want)) {
				t.Errorf("stderr:\n%s\nwant substring %q", stderr.String(), filepath.Join(dir, want))
			}
		})
	}
}

func TestRulesTest(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		status  int
		summary string
		lines   []string
	}{
		{name: "builtin", args: []string{"test", "--builtin"}, lines: []string{"PASS: guardd.rules.login_bruteforce_test.test_counts_failed_post"}},
		{name: "good", args: []string{"test", "../../rules/testdata/good"}, summary: "3 passed, 0 failed"},
		{
			name: "failing", args: []string{"test", "../../rules/testdata/failing"}, status: 1, summary: "1 passed, 1 failed",
			lines: []string{"PASS: guardd.rules.fails_test.test_passes", "FAIL: guardd.rules.fails_test.test_fails (../../rules/testdata/failing/fails_test.rego:7)"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			got := runRules(tc.args, &stdout, &stderr)
			if got != tc.status {
				t.Errorf("status %d, want %d\nstdout:\n%s\nstderr:\n%s", got, tc.status, stdout.String(), stderr.String())
			}
			out := stdout.String()
			lines := strings.Split(strings.TrimSpace(out), "\n")
			last := lines[len(lines)-1]
			if tc.summary != "" && last != tc.summary {
				t.Errorf("summary %q, want %q", last, tc.summary)
			}
			if !strings.HasSuffix(last, " 0 failed") && tc.status == 0 {
				t.Errorf("summary %q reports failures", last)
			}
			for _, l := range tc.lines {
				if !strings.Contains(out, l) {
					t.Errorf("stdout lacks %q:\n%s", l, out)
				}
			}
		})
	}
}

func TestRulesTestBadRule(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x_test.rego"), []byte("package guardd.rules.x_test\n\ntest_x if http.send({})\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if got := runRules([]string{"test", dir}, &stdout, &stderr); got != 1 {
		t.Errorf("status %d, want 1", got)
	}
	if want := filepath.Join(dir, "x_test.rego") + ":3: built-in http.send is not allowed"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr:\n%s\nwant %q", stderr.String(), want)
	}
}

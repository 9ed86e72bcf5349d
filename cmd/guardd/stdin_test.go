package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestGuarddProcess is guardd itself when GUARDD_TEST_ARGS is set: the
// tests that need a process of their own (standard input, a pipe) run the
// test binary with it. Otherwise it does nothing.
func TestGuarddProcess(t *testing.T) {
	args := os.Getenv("GUARDD_TEST_ARGS")
	if args == "" {
		t.Skip("only run as a child process")
	}
	var argv []string
	if err := json.Unmarshal([]byte(args), &argv); err != nil {
		t.Fatal(err)
	}
	os.Exit(dispatch(argv, os.Stdout, os.Stderr))
}

// guarddProcess returns a command that runs guardd with args in a child
// process (the test binary, through TestGuarddProcess).
func guarddProcess(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestGuarddProcess$")
	b, _ := json.Marshal(args)
	cmd.Env = append(os.Environ(), "GUARDD_TEST_ARGS="+string(b))
	return cmd
}

// elapsed matches the parts of replay's summary that change from run to
// run.
var elapsed = regexp.MustCompile(`in [0-9.]+s, [0-9]+ lines/s|time=\S+ `)

// TestReplayStdin: `guardd replay -` reads standard input with the same
// result and the same accounting as the file: the replay tests' cases run
// once on the file and once on its bytes piped in, plain and gzip, and
// print the same output, the same summary and the same exit status.
func TestReplayStdin(t *testing.T) {
	gz, err := os.ReadFile("../../testdata/access.log.gz")
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	var plain bytes.Buffer
	if _, err := plain.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	// A malformed line among them is counted and named on both paths.
	bad := append([]byte("this is not an access log line\n"), plain.Bytes()...)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plainPath, badPath, gzPath := write("access.log", plain.Bytes()), write("bad.log", bad), write("access.log.gz", gz)
	for _, tc := range []struct {
		name  string
		flags []string
		file  string
		input []byte
		rc    int
		want  []string // in stdout, or stderr when rc != 0
	}{
		{"table", nil, plainPath, plain.Bytes(), 0, []string{"login_bruteforce", "ip.src=203.0.113.10"}},
		{"json", []string{"--json"}, plainPath, plain.Bytes(), 0, []string{`"rule":"login_bruteforce"`}},
		{"clients", []string{"--json", "--clients"}, plainPath, plain.Bytes(), 0, []string{`"ip.src":"203.0.113.10"`}},
		{"gzip", []string{"--json"}, gzPath, gz, 0, []string{`"rule":"scan_404"`}},
		{"malformed", []string{"--json"}, badPath, bad, 0, []string{`"rule":"login_bruteforce"`}},
		{"wrong format", []string{"--log-json"}, plainPath, plain.Bytes(), 1, []string{"lines malformed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(log string, stdin []byte) (string, string, int) {
				cmd := guarddProcess(t, append(append([]string{"replay", "--progress", "never"}, tc.flags...), log)...)
				cmd.Stdin = bytes.NewReader(stdin)
				var out, errb bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errb
				err := cmd.Run()
				rc := 0
				if ee, ok := err.(*exec.ExitError); ok {
					rc = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				return out.String(), elapsed.ReplaceAllString(errb.String(), ""), rc
			}
			fileOut, fileErr, fileRC := run(tc.file, nil)
			out, errs, rc := run("-", tc.input)
			if rc != tc.rc || fileRC != tc.rc {
				t.Fatalf("exit status %d from stdin, %d from the file, want %d\nstdin's stderr: %s", rc, fileRC, tc.rc, errs)
			}
			for _, w := range tc.want {
				if got := map[bool]string{true: out, false: errs}[tc.rc == 0]; !strings.Contains(got, w) {
					t.Errorf("stdin's output lacks %q:\n%s", w, got)
				}
			}
			if out != fileOut {
				t.Errorf("stdout differs:\nfile:\n%s\nstdin:\n%s", fileOut, out)
			}
			// The summary is the same but for the file's name.
			if want := strings.ReplaceAll(fileErr, tc.file, "stdin"); errs != want {
				t.Errorf("stderr differs:\nfile:\n%s\nstdin:\n%s", want, errs)
			}
		})
	}
	if tc := "malformed"; true {
		cmd := guarddProcess(t, "replay", "--progress", "never", "--json", "-")
		cmd.Stdin = bytes.NewReader(bad)
		b, _ := cmd.CombinedOutput()
		if !strings.Contains(string(b), "(1 malformed)") {
			t.Errorf("%s: the summary does not count the malformed line:\n%s", tc, b)
		}
	}
	// "-" can be read once.
	if b, err := guarddProcess(t, "replay", "-", "-").CombinedOutput(); err == nil || !strings.Contains(string(b), "given twice") {
		t.Errorf("replay - -: %v %s", err, b)
	}
}

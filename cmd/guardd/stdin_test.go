package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/guardd/guardd/config"
	"github.com/guardd/guardd/testwait"
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

// startDaemonStdin is startDaemon with sources.stdin on and stdin as the
// daemon's standard input.
func startDaemonStdin(t *testing.T, dir string, stdin io.Reader) *testDaemon {
	t.Helper()
	td := &testDaemon{dir: dir, log: filepath.Join(dir, "access.log"), config: filepath.Join(dir, "guardd.yaml")}
	writeTestConfig(t, dir, "")
	b, _ := os.ReadFile(td.config)
	os.WriteFile(td.config, []byte(strings.Replace(string(b), "sources: {", "sources: {stdin: true, ", 1)), 0o644)
	cfg, err := config.Load(td.config)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Sources.Stdin {
		t.Fatal("sources.stdin not set")
	}
	td.d, err = newDaemon(td.config, cfg, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	td.d.stdin = stdin
	if err := td.d.listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	td.cancel, td.done = cancel, make(chan error, 1)
	go func() { td.done <- td.d.Run(ctx) }()
	return td
}

// TestDaemonStdin: `guardd run --stdin` following a pipe (docker logs -f)
// treats its lines as TestDaemon's file: the same lines block the same
// client, the malformed one is counted the same way, and the mitigations
// are the same; when the pipe closes, the daemon goes on answering.
func TestDaemonStdin(t *testing.T) {
	now := time.Now()
	var lines []string
	for i := range 6 {
		lines = append(lines, logLine("203.0.113.7", "/login", 401, now.Add(time.Duration(i)*time.Second)))
	}
	lines = append(lines, "garbage line", logLine("198.51.100.1", "/login", 401, now))
	results := map[string][]string{}
	for _, mode := range []string{"file", "stdin"} {
		t.Run(mode, func(t *testing.T) {
			var td *testDaemon
			var pw *os.File
			if mode == "file" {
				td = startDaemon(t, t.TempDir())
				td.appendLines(t, lines...)
			} else {
				pr, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				pw = w
				td = startDaemonStdin(t, t.TempDir(), pr)
				for _, l := range lines {
					fmt.Fprintln(pw, l) // line by line, as docker logs -f writes them
				}
			}
			defer td.stop(t)
			testwait.Until(t, patience, "the attacker to be blocked", func() bool { c, _ := td.decide(t, "203.0.113.7", "/"); return c == 401 })
			if c, _ := td.decide(t, "198.51.100.1", "/"); c != 204 {
				t.Fatalf("other client: %d, want 204", c)
			}
			events, bad := td.d.pm.Events.WithLabelValues("nginx_log"), td.d.pm.ParseErrors.WithLabelValues("nginx_log")
			// Every line, the malformed one too.
			testwait.Until(t, patience, "every line read", func() bool { return testutil.ToFloat64(events) == float64(len(lines)) })
			if n := testutil.ToFloat64(bad); n != 1 {
				t.Errorf("%v parse errors, want 1", n)
			}
			for _, m := range td.d.store.List(time.Now()) {
				results[mode] = append(results[mode], m.Rule+" "+string(m.Action)+" "+m.Scope.String())
			}
			if pw != nil {
				pw.Close() // the pipe's writer exits: the daemon goes on
				if c, _ := td.decide(t, "203.0.113.7", "/"); c != 401 {
					t.Errorf("after the pipe closed: %d", c)
				}
			}
		})
	}
	if fmt.Sprint(results["file"]) != fmt.Sprint(results["stdin"]) || len(results["file"]) == 0 {
		t.Errorf("mitigations from the file %v, from stdin %v", results["file"], results["stdin"])
	}
}

// TestRunStdinProcess: `guardd run --stdin` as a process, its standard
// input a pipe that stays open: a line written to it blocks its client at
// the decision API; SIGTERM stops it cleanly while the pipe is still open.
func TestRunStdinProcess(t *testing.T) {
	dir := t.TempDir()
	writeTestConfig(t, dir, "")
	cfgPath := filepath.Join(dir, "guardd.yaml")
	b, _ := os.ReadFile(cfgPath)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	decision := ln.Addr().String()
	ln.Close()
	// No file to follow: standard input only.
	src := regexp.MustCompile(`sources: \{nginx: \{[^\n]*\n`).ReplaceAllString(string(b), "")
	src = strings.Replace(src, "decision: {listen: 127.0.0.1:0}", "decision: {listen: "+decision+"}", 1)
	os.WriteFile(cfgPath, []byte(src), 0o644)
	cmd := guarddProcess(t, "run", "--config", cfgPath, "--stdin")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	decide := func() int {
		req, _ := http.NewRequest("GET", "http://"+decision+"/v1/decide", nil)
		req.Header.Set("X-Real-IP", "203.0.113.7")
		req.Header.Set("X-Original-Method", "GET")
		req.Header.Set("X-Original-URI", "/")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	testwait.Until(t, patience, "the daemon to answer", func() bool { return decide() == 204 })
	now := time.Now()
	for i := range 6 {
		fmt.Fprintln(in, logLine("203.0.113.7", "/login", 401, now.Add(time.Duration(i)*time.Second)))
	}
	testwait.Until(t, patience, "the client to be blocked", func() bool { return decide() == 401 })
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, errb.String())
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("guardd run --stdin did not stop on SIGTERM with its pipe open\n%s", errb.String())
	}
}

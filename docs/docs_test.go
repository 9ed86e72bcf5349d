package docs

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/guardd/guardd/characteristics/mmdbtest"
	"github.com/guardd/guardd/mitigation/nginxtest"
)

// snippet is one fenced block of a Markdown file.
type snippet struct {
	file string
	line int // of the opening fence
	lang string
	text string
}

// snippets returns the fenced blocks of docs/*.md and the README, indented
// ones (inside list items) included, with their indentation removed.
func snippets(t *testing.T) []snippet {
	t.Helper()
	files, _ := filepath.Glob("*.md")
	files = append(files, "../README.md")
	fence := regexp.MustCompile("^(\\s*)```(\\S*)\\s*$")
	var out []snippet
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		for i := 0; i < len(lines); i++ {
			m := fence.FindStringSubmatch(lines[i])
			if m == nil || m[2] == "" {
				continue
			}
			indent, s := m[1], snippet{file: f, line: i + 1, lang: m[2]}
			var body []string
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
				body = append(body, strings.TrimPrefix(lines[i], indent))
			}
			s.text = strings.Join(body, "\n") + "\n"
			out = append(out, s)
		}
	}
	return out
}

// guardd builds the command once per test binary.
func guardd(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "guardd")
	cmd := exec.Command("go", "build", "-o", bin, "../cmd/guardd")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestYAMLSnippets: every yaml block is a configuration `guardd check`
// accepts, as it stands (a section alone is a whole configuration: what it
// leaves out takes its default). /etc/guardd/rules and the .mmdb files it names are made to exist.
func TestYAMLSnippets(t *testing.T) {
	bin := guardd(t)
	n := 0
	for _, s := range snippets(t) {
		if s.lang != "yaml" {
			continue
		}
		n++
		t.Run(fmt.Sprintf("%s:%d", s.file, s.line), func(t *testing.T) {
			dir := t.TempDir()
			// The directories a snippet names exist on the machine it is for.
			rules := filepath.Join(dir, "rules")
			os.MkdirAll(rules, 0o755)
			text := strings.ReplaceAll(s.text, "/etc/guardd/rules", rules)
			// Files under /etc/guardd (lists the configuration reads) are
			// made empty.
			for _, f := range regexp.MustCompile(`/etc/guardd/[\w.-]+\.\w+`).FindAllString(text, -1) {
				local := filepath.Join(dir, filepath.Base(f))
				os.WriteFile(local, nil, 0o644)
				text = strings.ReplaceAll(text, f, local)
			}
			// So do the MaxMind databases it names (small ones written here).
			for _, db := range regexp.MustCompile(`/\S+\.mmdb`).FindAllString(text, -1) {
				local := filepath.Join(dir, filepath.Base(db))
				if err := mmdbtest.Write(local, []mmdbtest.Network{{Prefix: netip.MustParsePrefix("192.0.2.0/24"), ASN: 64496, Country: "NL"}}); err != nil {
					t.Fatal(err)
				}
				text = strings.ReplaceAll(text, db, local)
			}
			path := filepath.Join(dir, "guardd.yaml")
			os.WriteFile(path, []byte(text), 0o644)
			out, err := exec.Command(bin, "check", "--config", path).CombinedOutput()
			if err != nil {
				t.Errorf("%s:%d: guardd check refuses the snippet:\n%s\n--- snippet:\n%s", s.file, s.line, out, s.text)
			}
		})
	}
	if n == 0 {
		t.Fatal("no yaml snippets found")
	}
}

// The one recommended log_format.
const recommended = `log_format guardd '$remote_addr - $remote_user [$time_local] "$request" '
                  '$status $body_bytes_sent "$http_referer" "$http_user_agent" '
                  '$remote_port $request_time "$host" "$http_x_forwarded_for" '
                  '"$cookie_session" $request_id';`

// TestOneLogFormat: every `log_format guardd` in the docs, the README and the
// packaged configuration is the recommended one (whitespace aside).
func TestOneLogFormat(t *testing.T) {
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	want := norm(recommended)
	re := regexp.MustCompile(`(?s)log_format guardd '.*?';`)
	files, _ := filepath.Glob("*.md")
	files = append(files, "../README.md", "../packaging/guardd.yaml")
	n := 0
	for _, f := range files {
		data, _ := os.ReadFile(f)
		for _, m := range re.FindAllString(string(data), -1) {
			n++
			if norm(m) != want {
				t.Errorf("%s: a different log_format guardd:\n%s\nwant\n%s", f, m, recommended)
			}
		}
	}
	if n < 3 {
		t.Errorf("found the format %d times; the docs lost it?", n)
	}
}

// TestNginxSnippets: every nginx block passes `nginx -t` in a configuration
// built around it: blocks with http-level directives (log_format, upstream,
// server, map, geo) go in the http block, the others in a server block, both
// beside the upstreams and the log format the docs tell you to define.
func TestNginxSnippets(t *testing.T) {
	nginx := nginxtest.Path(t)
	httpLevel := regexp.MustCompile(`(?m)^(log_format|upstream|server\s*\{|map|geo|limit_req_zone|include)\b`)
	n := 0
	for _, s := range snippets(t) {
		if s.lang != "nginx" {
			continue
		}
		n++
		t.Run(fmt.Sprintf("%s:%d", s.file, s.line), func(t *testing.T) {
			dir := t.TempDir()
			os.MkdirAll(filepath.Join(dir, "logs"), 0o755)
			var http, server string
			if httpLevel.MatchString(s.text) {
				http = s.text
			} else {
				server = s.text
			}
			base := ""
			if !strings.Contains(s.text, "log_format guardd") {
				base += recommended + "\n"
			}
			if !strings.Contains(s.text, "upstream guardd") {
				base += "upstream guardd { server 127.0.0.1:9480; keepalive 64; }\n"
			}
			if !strings.Contains(s.text, "upstream app") {
				base += "upstream app { server 127.0.0.1:8080; }\n"
			}
			if server != "" {
				server = "server {\n    listen 127.0.0.1:18080;\n" + server + "\n}\n"
			}
			conf := fmt.Sprintf(`error_log %[1]s/logs/error.log;
pid %[1]s/nginx.pid;
events {}
http {
    access_log %[1]s/logs/access.log;
%[2]s
%[3]s
%[4]s
}
`, dir, base, http, server)
			// Paths the docs name on a real machine.
			conf = strings.ReplaceAll(conf, "/var/log/nginx/", dir+"/logs/")
			path := filepath.Join(dir, "nginx.conf")
			os.WriteFile(path, []byte(conf), 0o644)
			var out bytes.Buffer
			cmd := exec.Command(nginx, "-t", "-p", dir, "-c", path)
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Errorf("%s:%d: nginx -t refuses it:\n%s\n--- configuration:\n%s", s.file, s.line, out.String(), conf)
			}
		})
	}
	if n == 0 {
		t.Fatal("no nginx snippets found")
	}
}

// TestReplaySample: the output replay.md shows is what `guardd replay` prints
// for the shipped sample log (table rows and the JSON line).
func TestReplaySample(t *testing.T) {
	bin := guardd(t)
	table, err := exec.Command(bin, "replay", "--progress", "never", "../testdata/access.log.gz").Output()
	if err != nil {
		t.Fatal(err)
	}
	jsonOut, err := exec.Command(bin, "replay", "--progress", "never", "--json", "../testdata/access.log.gz").Output()
	if err != nil {
		t.Fatal(err)
	}
	clientsOut, err := exec.Command(bin, "replay", "--progress", "never", "--json", "--clients", "../testdata/access.log.gz").Output()
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	for _, l := range strings.Split(string(table), "\n") {
		rows[strings.Join(strings.Fields(l), " ")] = true
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(string(jsonOut)+string(clientsOut), "\n") {
		lines[l] = true
	}
	var checked int
	for _, s := range snippets(t) {
		if s.file != "replay.md" {
			continue
		}
		switch s.lang {
		case "text":
			for _, l := range strings.Split(strings.TrimSpace(s.text), "\n") {
				checked++
				if !rows[strings.Join(strings.Fields(l), " ")] {
					t.Errorf("replay.md:%d: %q is not in guardd replay's output for testdata/access.log.gz", s.line, l)
				}
			}
		case "json":
			for _, l := range strings.Split(strings.TrimSpace(s.text), "\n") {
				checked++
				if !lines[l] {
					t.Errorf("replay.md:%d: %s is not in guardd replay --json's output", s.line, l)
				}
			}
		}
	}
	if checked < 3 {
		t.Errorf("checked %d sample lines of replay.md", checked)
	}
}
